// The CUDA INT8 GEMMs compiled by g++ for the CPU runtime: the same .cuh files nvcc
// compiles in igemm_gpu.cu (__dp4a from cuda_cpu/int_intrinsics.hpp, WMMA from
// cuda_cpu/wmma.hpp).
#include "kernels/cuda/igemm.cuh"

namespace gl::kernels {

void cuda_igemm(CudaIgemm kernel, int M, int N, int K, const std::int8_t* A, const std::int8_t* B,
                std::int32_t* C) {
    cuda::PaddedIgemm p = cuda::pad_igemm(kernel, M, N, K, A, B);
    cuda::launch_igemm(kernel, p.M, p.N, p.K, p.a.data(), p.b.data(), p.c.data());
    cuda::crop(p.c, p.N, M, N, C);
}

}  // namespace gl::kernels
