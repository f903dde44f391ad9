/// @file
/// @brief Random test data for tests and benchmarks: seeded, so the same seed gives the
/// same numbers on every machine.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "numerics/dtype.hpp"

namespace gl::testkit {

/// @p n floats uniform in [@p lo, @p hi), drawn by gl::Rng from @p seed.
std::vector<float> random_floats(std::size_t n, std::uint64_t seed, double lo = -1.0, double hi = 1.0);

/// @p n values uniform in [@p lo, @p hi) rounded to @p dtype (Float16 or BFloat16), as
/// the raw 16-bit patterns the low-precision kernels take.
std::vector<std::uint16_t> random_16bit(DType dtype, std::size_t n, std::uint64_t seed, double lo = -1.0,
                                        double hi = 1.0);

}  // namespace gl::testkit
