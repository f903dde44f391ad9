/// @file
/// @brief CUDA's 16-bit float types for kernels written once for nvcc and the CPU runtime.
///
/// Under nvcc this is <cuda_fp16.h> and <cuda_bf16.h>. On the CPU runtime `__half` and
/// `__nv_bfloat16` are gradlab's own half and bfloat16 (core/numerics/), and the
/// conversion intrinsics a kernel needs call their conversions, which round to nearest
/// even as the `_rn` intrinsics do on the GPU. Only what the kernels use is provided.
#pragma once

#if defined(__CUDACC__)

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#else

#include "numerics/bfloat16.hpp"
#include "numerics/half.hpp"

/// CUDA's half type: gradlab's half on the CPU runtime.
using __half = gl::half;
/// CUDA's bfloat16 type: gradlab's bfloat16 on the CPU runtime.
using __nv_bfloat16 = gl::bfloat16;

/// float -> half, round to nearest even.
inline __half __float2half_rn(float f) { return __half(f); }
/// half -> float (exact).
inline float __half2float(__half h) { return static_cast<float>(h); }
/// float -> bfloat16, round to nearest even.
inline __nv_bfloat16 __float2bfloat16_rn(float f) { return __nv_bfloat16(f); }
/// bfloat16 -> float (exact).
inline float __bfloat162float(__nv_bfloat16 b) { return static_cast<float>(b); }

#endif
