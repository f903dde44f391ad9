// The 16-bit CUDA kernels compiled by g++ for the CPU runtime: the same .cuh files nvcc
// compiles in lowp_gpu.cu (the WMMA GEMM through cuda_cpu/wmma.hpp).
#include "kernels/cuda/hgemm_wmma.cuh"
#include "kernels/cuda/lowp.hpp"
#include "kernels/cuda/lowp_elementwise.cuh"
#include "kernels/cuda/padded.hpp"

namespace gl::kernels {

void cuda_axpy_half(int n, float a, const std::uint16_t* x, std::uint16_t* y) {
    cuda::launch_axpy_lowp<__half>(n, a, reinterpret_cast<const __half*>(x), reinterpret_cast<__half*>(y));
}

void cuda_axpy_bf16(int n, float a, const std::uint16_t* x, std::uint16_t* y) {
    cuda::launch_axpy_lowp<__nv_bfloat16>(n, a, reinterpret_cast<const __nv_bfloat16*>(x),
                                          reinterpret_cast<__nv_bfloat16*>(y));
}

void cuda_hgemm_wmma(int M, int N, int K, const std::uint16_t* A, const std::uint16_t* B, float* C) {
    const int M16 = cuda::round_up(M, 16), N16 = cuda::round_up(N, 16), K16 = cuda::round_up(K, 16);
    const auto a = cuda::padded(A, M, K, M16, K16), b = cuda::padded(B, K, N, K16, N16);
    std::vector<float> c(std::size_t(M16) * N16);
    cuda::launch_hgemm_wmma(M16, N16, K16, reinterpret_cast<const __half*>(a.data()),
                            reinterpret_cast<const __half*>(b.data()), c.data());
    cuda::crop(c, N16, M, N, C);
}

}  // namespace gl::kernels
