/// @file
/// @brief Bandwidth-bound element-wise kernels on FP32, FP16 and BF16 storage.
///
/// Owns: y = a*x + y (axpy) and y = max(x, 0) (relu) on FP16 and BF16 storage; the FP32
/// versions they are compared with are kernels/cpu/elementwise.hpp. They widen to FP32,
/// compute in FP32 and round back (round to nearest even), so they do the same
/// arithmetic as the FP32 versions on half the bytes. Beyond the caches these kernels are
/// limited by memory bandwidth, which is where 16-bit storage pays (claim FP-6). AVX-512
/// paths where the CPU has AVX-512F/BW/VL, portable loops elsewhere; large arrays are
/// split over the intra-op threads like the FP32 kernels.
#pragma once

#include <cstddef>
#include <cstdint>

namespace gl::kernels {

/// y[i] = a * x[i] + y[i] on float16 storage (FP32 arithmetic, one rounding per result).
void axpy_f16(std::size_t n, float a, const std::uint16_t* x, std::uint16_t* y);
/// axpy on bfloat16 storage (FP32 arithmetic, one rounding per result).
void axpy_bf16(std::size_t n, float a, const std::uint16_t* x, std::uint16_t* y);
/// y[i] = max(x[i], 0) on float16 storage.
void relu_f16(std::size_t n, const std::uint16_t* x, std::uint16_t* y);
/// True when the AVX-512 versions run (otherwise the portable loops do).
bool elementwise_lowp_uses_avx512();

}  // namespace gl::kernels
