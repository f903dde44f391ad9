/// @file
/// @brief Numbers as the reports print them.
#pragma once

#include <cstdint>
#include <string>

namespace gl::testkit {

/// @p value with @p digits digits after the point ("3.14").
std::string fixed(double value, int digits);
/// @p value in scientific notation with @p digits digits after the point ("1.2e-07").
std::string scientific(double value, int digits);
/// A byte count in the largest binary unit that keeps it whole or above 1: "256 MiB",
/// "32 KiB", "2 GiB" (rounded down).
std::string size_str(std::int64_t bytes);
/// @p bytes in MiB with two digits ("12.50 MiB").
std::string mib(double bytes);

}  // namespace gl::testkit
