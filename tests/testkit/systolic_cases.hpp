/// @file
/// @brief Operands and the oracle for the systolic array's tests, benchmarks and claims:
/// random int8 and float matrices, and the plain int8 -> int32 GEMM they are checked with.
#pragma once

#include <cstdint>

#include "systolic/systolic.hpp"

namespace gl::testkit {

/// A rows x cols matrix of int8 values uniform over all 256 of them, from @p seed.
systolic::Matrix<std::int8_t> random_int8_matrix(std::int64_t rows, std::int64_t cols, std::uint64_t seed);
/// A rows x cols matrix of floats uniform in [-1, 1), from @p seed.
systolic::Matrix<float> random_float_matrix(std::int64_t rows, std::int64_t cols, std::uint64_t seed);
/// The reference product of int8 matrices, summed in 64 bits; throws if a sum does not
/// fit the int32 accumulators (it cannot for K < 2^17).
systolic::Matrix<std::int32_t> reference_int8_gemm(const systolic::Matrix<std::int8_t>& A,
                                                   const systolic::Matrix<std::int8_t>& B);
/// The reference product of float matrices, summed in double.
systolic::Matrix<double> reference_float_gemm(const systolic::Matrix<float>& A, const systolic::Matrix<float>& B);

}  // namespace gl::testkit
