/// @file
/// @brief The FP-1 table: bits, precision and range of FP64, FP32, FP16, BF16 and INT8,
/// computed from the types themselves rather than typed in.
///
/// Owns: describing number formats. For float and double the numbers come from
/// std::numeric_limits; for half and bfloat16 they are decoded from bit patterns with
/// this library's own conversions, so the table is also a check of them.
#pragma once

#include <string>
#include <vector>

namespace gl::numerics {

/// One row of the number-format table.
struct FormatInfo {
    std::string name;          ///< "FP32", "FP16", "BF16", "INT8", ...
    int bits = 0;              ///< storage bits
    int exponent_bits = 0;     ///< exponent field width (0 for integers)
    int mantissa_bits = 0;     ///< stored fraction bits (value bits for integers)
    double epsilon = 0;        ///< gap between 1 and the next value (1 for integers)
    double max = 0;            ///< largest finite value
    double min_normal = 0;     ///< smallest positive normal value (1 for integers)
    double min_subnormal = 0;  ///< smallest positive value (1 for integers)
    double lowest = 0;         ///< most negative finite value
    double decimal_digits = 0; ///< significant decimal digits, log10(2^(mantissa bits + 1))
};

/// FP64, FP32, FP16, BF16 and INT8, in that order.
std::vector<FormatInfo> format_table();

/// The row called @p name; throws gl::Error listing the names otherwise.
FormatInfo format_info(const std::string& name);

}  // namespace gl::numerics
