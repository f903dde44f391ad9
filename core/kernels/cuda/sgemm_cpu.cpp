// The CUDA SGEMM family compiled by g++ for the CPU runtime: the same .cuh files nvcc
// compiles in sgemm_gpu.cu, instantiated with direct and with counted memory access.
#include "kernels/cuda/sgemm.cuh"
#include "kernels/cuda/sgemm.hpp"

namespace gl::kernels {

void cuda_gemm(int version, int M, int N, int K, const float* A, const float* B, float* C) {
    cuda::launch_sgemm<gl::cuda::Direct>(version, M, N, K, A, B, C);
}

void cuda_gemm_counted(int version, int M, int N, int K, const float* A, const float* B, float* C) {
    cuda::launch_sgemm<gl::cuda::Counted>(version, M, N, K, A, B, C);
}

}  // namespace gl::kernels
