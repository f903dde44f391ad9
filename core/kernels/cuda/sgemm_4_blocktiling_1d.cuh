/// @file
/// @brief Version 4 of the CUDA SGEMM family: 1D block tiling (several results per thread).
///
/// Version 3 does two shared-memory loads per multiply-add, and shared memory, fast as it
/// is, becomes the bottleneck. Here each thread computes TM results, a short column of C:
/// in the inner loop one value of Bs, kept in a register, serves TM multiply-adds. Tiles are
/// now BM x BK (A) and BK x BN (B), and a block of BM*BN/TM threads computes a BM x BN tile.
#pragma once

#include "cuda_cpu/cuda_compat.hpp"

namespace gl::kernels::cuda {

/// C = A * B. Launch: block BM*BN/TM, grid (ceil(N/BN), ceil(M/BM)).
template <int BM, int BN, int BK, int TM, class Access = gl::cuda::Direct>
__global__ void sgemm_4_blocktiling_1d(int M, int N, int K,
                                       gl::cuda::global_ptr<Access, const float> A,
                                       gl::cuda::global_ptr<Access, const float> B,
                                       gl::cuda::global_ptr<Access, float> C) {
    // Every thread loads exactly one element of each tile.
    static_assert(BM * BK == BM * BN / TM && BK * BN == BM * BN / TM,
                  "the tiles must have one element per thread");
    __shared__ gl::cuda::shared_array<Access, float, BM * BK> As;
    __shared__ gl::cuda::shared_array<Access, float, BK * BN> Bs;

    const int cRow = blockIdx.y;
    const int cCol = blockIdx.x;
    // This thread computes rows threadRow*TM ... threadRow*TM + TM-1 of column threadCol.
    const int threadCol = threadIdx.x % BN;
    const int threadRow = threadIdx.x / BN;
    // The element of each tile this thread loads.
    const int innerColA = threadIdx.x % BK;
    const int innerRowA = threadIdx.x / BK;
    const int innerColB = threadIdx.x % BN;
    const int innerRowB = threadIdx.x / BN;
    const int rowsLeft = M - cRow * BM;
    const int colsLeft = N - cCol * BN;

    A += cRow * BM * K;              // row=cRow*BM, col=0
    B += cCol * BN;                  // row=0, col=cCol*BN
    C += cRow * BM * N + cCol * BN;  // row=cRow*BM, col=cCol*BN

    float threadResults[TM] = {0.0f};
    for (int bkIdx = 0; bkIdx < K; bkIdx += BK) {
        As[innerRowA * BK + innerColA] =
            innerRowA < rowsLeft && bkIdx + innerColA < K ? A[innerRowA * K + innerColA] : 0.0f;
        Bs[innerRowB * BN + innerColB] =
            bkIdx + innerRowB < K && innerColB < colsLeft ? B[innerRowB * N + innerColB] : 0.0f;
        __syncthreads();
        A += BK;      // row unchanged, col += BK
        B += BK * N;  // row += BK, col unchanged

        for (int dotIdx = 0; dotIdx < BK; ++dotIdx) {
            const float tmpB = Bs[dotIdx * BN + threadCol];  // one load, TM multiply-adds
            for (int resIdx = 0; resIdx < TM; ++resIdx)
                threadResults[resIdx] += As[(threadRow * TM + resIdx) * BK + dotIdx] * tmpB;
        }
        __syncthreads();
    }
    for (int resIdx = 0; resIdx < TM; ++resIdx) {
        const int row = threadRow * TM + resIdx;
        if (row < rowsLeft && threadCol < colsLeft) C[row * N + threadCol] = threadResults[resIdx];
    }
}

}  // namespace gl::kernels::cuda
