/// @file
/// @brief CUDA element-wise kernels on 16-bit storage (half, bfloat16), FP32 arithmetic.
///
/// axpy_lowp: y = a x + y with one thread per element; each element is widened to FP32,
/// combined with one fused multiply-add and rounded back (round to nearest even) once. It
/// moves half the bytes of the FP32 version, which is all that matters for a kernel this
/// far below the GPU's arithmetic peak (claim FP-6, MEM-1). The same kernel runs on the CPU
/// runtime (lowp_elementwise_cpu.cpp), where it gives bit-identical results to the CPU
/// kernels of kernels/cpu/elementwise_lowp.hpp, and under nvcc (lowp_elementwise_gpu.cu).
#pragma once

#include <cmath>

#include "cuda_cpu/cuda_compat.hpp"
#include "cuda_cpu/cuda_fp16_compat.hpp"

namespace gl::kernels::cuda {

/// half -> float.
__device__ __forceinline__ float widen(__half h) { return __half2float(h); }
/// bfloat16 -> float.
__device__ __forceinline__ float widen(__nv_bfloat16 b) { return __bfloat162float(b); }

/// float -> T (half or bfloat16), round to nearest even.
template <class T>
__device__ __forceinline__ T narrow(float f);
/// @cond
template <>
__device__ __forceinline__ __half narrow<__half>(float f) { return __float2half_rn(f); }
template <>
__device__ __forceinline__ __nv_bfloat16 narrow<__nv_bfloat16>(float f) { return __float2bfloat16_rn(f); }
/// @endcond

/// y[i] = a * x[i] + y[i] for i < n, T = __half or __nv_bfloat16. Launch: any 1-d block
/// size, grid ceil(n / block).
template <class T, class Access = gl::cuda::Direct>
__global__ void axpy_lowp(int n, float a, gl::cuda::global_ptr<Access, const T> x, gl::cuda::global_ptr<Access, T> y) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = narrow<T>(fmaf(a, widen(static_cast<T>(x[i])), widen(static_cast<T>(y[i]))));
}

/// Launches axpy_lowp on the runtime this file is compiled for (x and y: its device memory).
template <class T, class Access = gl::cuda::Direct>
void launch_axpy_lowp(int n, float a, const T* x, T* y) {
    if (n <= 0) return;
    constexpr int block = 256;
    gl::cuda::launch(axpy_lowp<T, Access>, dim3((n + block - 1) / block), dim3(block), 0, n, a, x, y);
}

}  // namespace gl::kernels::cuda
