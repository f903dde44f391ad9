/// @file
/// @brief An INT8 GEMM on tensor cores: C (int32) = A B^T with A and B in int8, through WMMA.
///
/// hgemm_wmma.cuh with 8-bit integers instead of FP16: each warp owns one 16 x 16 tile of C
/// and issues one mma_sync per 16-wide slice of K, which INT8 tensor cores (sm_72 and
/// later) execute at twice their FP16 rate, accumulating exactly in int32. The operands
/// are laid out as for igemm_dp4a.cuh: A M x K row-major, B N x K row-major (a Linear
/// layer's weights), which is the K x N operand stored column-major, so the B fragment is
/// `col_major` with leading dimension K. The same deliberately plain structure as the FP16
/// version (fragments from global memory, one tile per warp); M, N, K multiples of 16.
#pragma once

#include <cstdint>

#include "cuda_cpu/cuda_compat.hpp"
#include "cuda_cpu/wmma.hpp"

namespace gl::kernels::cuda {
namespace {  // internal: g++ (CPU runtime) and nvcc (GPU) each compile their own copy

/// C[M x N] = A[M x K] B[N x K]^T. Launch: block (32, 4) = 4 warps, each owning one
/// 16 x 16 tile: grid (ceil(N / 16), ceil(M / 64)).
__global__ void igemm_wmma(int M, int N, int K, const std::int8_t* A, const std::int8_t* B, std::int32_t* C) {
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 720  // INT8 WMMA exists from sm_72 on
    using namespace nvcuda;
    const int tileRow = (blockIdx.y * blockDim.y + threadIdx.y) * 16;  // this warp's rows of C
    const int tileCol = blockIdx.x * 16;                                 // ... and columns
    if (tileRow >= M || tileCol >= N) return;
    // WMMA's 8-bit element type is (signed) char; int8_t is signed char on every platform CUDA runs on.
    const auto* a8 = reinterpret_cast<const signed char*>(A);
    const auto* b8 = reinterpret_cast<const signed char*>(B);
    wmma::fragment<wmma::matrix_a, 16, 16, 16, signed char, wmma::row_major> a;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, signed char, wmma::col_major> b;
    wmma::fragment<wmma::accumulator, 16, 16, 16, int> acc;
    wmma::fill_fragment(acc, 0);
    for (int k = 0; k < K; k += 16) {
        wmma::load_matrix_sync(a, a8 + std::size_t(tileRow) * K + k, K);  // rows tileRow.., K values k..
        wmma::load_matrix_sync(b, b8 + std::size_t(tileCol) * K + k, K);  // B's rows tileCol.. = columns of B^T
        wmma::mma_sync(acc, a, b, acc);                                    // 8-bit products, int32 sums
    }
    wmma::store_matrix_sync(reinterpret_cast<int*>(C) + std::size_t(tileRow) * N + tileCol, acc, N,
                            wmma::mem_row_major);
#endif
}

}  // namespace
}  // namespace gl::kernels::cuda
