/// @file
/// @brief Benchmark operands laid out like a tensor's storage: 64-byte aligned, as
/// gl::cpu_allocator returns them (base/aligned_vector.hpp says why alignment matters: a
/// std::vector of a few megabytes starts 16 bytes into a cache line, so each row of a
/// power-of-two-wide matrix would too, and a kernel that stores 32-float rows of a tile
/// would pay for a layout no tensor has).
#pragma once

#include <vector>

#include "base/aligned_vector.hpp"

namespace gl::testkit {

using gl::AlignedVector;

/// A copy of @p values in an AlignedVector.
template <class T>
AlignedVector<T> aligned(const std::vector<T>& values) {
    return AlignedVector<T>(values.begin(), values.end());
}

}  // namespace gl::testkit
