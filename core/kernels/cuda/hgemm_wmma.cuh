/// @file
/// @brief A tensor-core GEMM: C (FP32) = A B with A and B in FP16, through WMMA.
///
/// Each warp computes one 16 x 16 tile of C. For every 16-wide slice of K it loads a
/// 16 x 16 fragment of A and of B and issues one mma_sync, which the tensor cores execute
/// as FP16 multiplies with FP32 accumulation (claim FP-5: the accumulation precision is what
/// keeps long dot products accurate). Deliberately the first tensor-core version: fragments
/// come straight from global memory (through L1), without shared-memory staging or
/// several tiles per warp, so it shows the instruction, not a tuned kernel. M, N, K must be
/// multiples of 16 (the host entry pads). On a GPU it needs sm_70 or later; on the CPU
/// runtime cuda_cpu/wmma.hpp computes the same tiles with loops, so CI runs it too.
#pragma once

#include "cuda_cpu/cuda_compat.hpp"
#include "cuda_cpu/cuda_fp16_compat.hpp"
#include "cuda_cpu/wmma.hpp"

namespace gl::kernels::cuda {
namespace {  // internal: g++ (CPU runtime) and nvcc (GPU) each compile their own copy

/// C[M x N] = A[M x K] B[K x N], row-major. Launch: block (32, 4) = 4 warps, each owning
/// one 16 x 16 tile: grid (ceil(N / 16), ceil(M / 64)).
__global__ void hgemm_wmma(int M, int N, int K, const __half* A, const __half* B, float* C) {
    using namespace nvcuda;
    const int tileRow = (blockIdx.y * blockDim.y + threadIdx.y) * 16;  // this warp's rows of C
    const int tileCol = blockIdx.x * 16;                                 // ... and columns
    if (tileRow >= M || tileCol >= N) return;
    wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> a;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::row_major> b;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
    wmma::fill_fragment(acc, 0.0f);
    for (int k = 0; k < K; k += 16) {
        wmma::load_matrix_sync(a, A + tileRow * K + k, K);  // rows tileRow.., columns k..
        wmma::load_matrix_sync(b, B + k * N + tileCol, N);  // rows k.., columns tileCol..
        wmma::mma_sync(acc, a, b, acc);                     // FP16 products, FP32 sums
    }
    wmma::store_matrix_sync(C + tileRow * N + tileCol, acc, N, wmma::mem_row_major);
}

/// Launches hgemm_wmma on memory of the runtime it is compiled for (M, N, K multiples of 16).
inline void launch_hgemm_wmma(int M, int N, int K, const __half* A, const __half* B, float* C) {
    if (M == 0 || N == 0) return;
    const dim3 block(32, 4);  // four warps, stacked in y: 64 rows of C per block
    const dim3 grid(N / 16, (M / 16 + 3) / 4);
    gl::cuda::launch(hgemm_wmma, grid, block, 0, M, N, K, A, B, C);
}

}  // namespace
}  // namespace gl::kernels::cuda
