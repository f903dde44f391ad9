// The 16-bit CUDA element-wise kernels compiled by g++ for the CPU runtime: the same .cuh
// nvcc compiles in lowp_gpu.cu. (The WMMA GEMM has no CPU-runtime version: the runtime does
// not model tensor cores.)
#include "kernels/cuda/lowp.hpp"
#include "kernels/cuda/lowp_elementwise.cuh"

namespace gl::kernels {

void cuda_axpy_half(int n, float a, const std::uint16_t* x, std::uint16_t* y) {
    cuda::launch_axpy_lowp<__half>(n, a, reinterpret_cast<const __half*>(x), reinterpret_cast<__half*>(y));
}

void cuda_axpy_bf16(int n, float a, const std::uint16_t* x, std::uint16_t* y) {
    cuda::launch_axpy_lowp<__nv_bfloat16>(n, a, reinterpret_cast<const __nv_bfloat16*>(x),
                                          reinterpret_cast<__nv_bfloat16*>(y));
}

}  // namespace gl::kernels
