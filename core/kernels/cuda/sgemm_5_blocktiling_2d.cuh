/// @file
/// @brief Version 5 of the CUDA SGEMM family: 2D block tiling (an outer product per thread).
///
/// Each thread now computes a TM x TN sub-tile of C. In the inner loop it copies TM values
/// of As (a piece of a column) and TN values of Bs (a piece of a row) into registers and
/// does all TM*TN multiply-adds between them: 64 multiply-adds for 16 shared loads with
/// TM = TN = 8, against 9 per 8 in version 4. The tiles are larger than the block has
/// threads, so each thread loads several elements of each, strided.
#pragma once

#include "cuda_cpu/cuda_compat.hpp"

namespace gl::kernels::cuda {

/// C = A * B. Launch: block BM*BN/(TM*TN), grid (ceil(N/BN), ceil(M/BM)).
template <int BM, int BN, int BK, int TM, int TN, class Access = gl::cuda::Direct>
__global__ void sgemm_5_blocktiling_2d(int M, int N, int K,
                                       gl::cuda::global_ptr<Access, const float> A,
                                       gl::cuda::global_ptr<Access, const float> B,
                                       gl::cuda::global_ptr<Access, float> C) {
    constexpr int numThreads = (BM * BN) / (TM * TN);
    static_assert(numThreads % BK == 0 && numThreads % BN == 0, "tile loads must divide evenly");
    // LAB 03 BEGIN: register-blocked kernel
    // (Extra points.) A block of numThreads threads computes the BM x BN tile of C at tile
    // row blockIdx.y and tile column blockIdx.x; each thread a TM x TN sub-tile of it, kept
    // in registers (a local array float threadResults[TM * TN]). Shared tiles:
    //   __shared__ gl::cuda::shared_array<Access, float, BM * BK> As;  (BK * BN for Bs)
    // For each step of BK along k: load the tiles, numThreads elements per pass, each pass
    // a block of whole rows (row threadIdx.x / BK, column threadIdx.x % BK of the A tile,
    // then numThreads / BK rows further down; likewise for B with BN), zeros outside the
    // matrices; __syncthreads(); then for each dotIdx < BK copy TM values of a column of
    // As and TN values of a row of Bs into registers and add their outer product to
    // threadResults; __syncthreads(). Finally store the sub-tile's elements that lie in C.
    __shared__ gl::cuda::shared_array<Access, float, BM * BK> As;
    __shared__ gl::cuda::shared_array<Access, float, BK * BN> Bs;

    const int cRow = blockIdx.y;
    const int cCol = blockIdx.x;
    // This thread computes the TM x TN sub-tile at (threadRow*TM, threadCol*TN) of the tile.
    const int threadCol = threadIdx.x % (BN / TN);
    const int threadRow = threadIdx.x / (BN / TN);
    // The first element of each tile this thread loads; it then moves down by the stride.
    const int innerColA = threadIdx.x % BK;
    const int innerRowA = threadIdx.x / BK;
    constexpr int strideA = numThreads / BK;  // rows of the A tile loaded per pass
    const int innerColB = threadIdx.x % BN;
    const int innerRowB = threadIdx.x / BN;
    constexpr int strideB = numThreads / BN;  // rows of the B tile loaded per pass
    const int rowsLeft = M - cRow * BM;
    const int colsLeft = N - cCol * BN;

    A += cRow * BM * K;              // row=cRow*BM, col=0
    B += cCol * BN;                  // row=0, col=cCol*BN
    C += cRow * BM * N + cCol * BN;  // row=cRow*BM, col=cCol*BN

    float threadResults[TM * TN] = {0.0f};
    float regM[TM] = {0.0f};
    float regN[TN] = {0.0f};
    for (int bkIdx = 0; bkIdx < K; bkIdx += BK) {
        for (int loadOffset = 0; loadOffset < BM; loadOffset += strideA) {
            const int r = innerRowA + loadOffset;
            As[r * BK + innerColA] = r < rowsLeft && bkIdx + innerColA < K ? A[r * K + innerColA] : 0.0f;
        }
        for (int loadOffset = 0; loadOffset < BK; loadOffset += strideB) {
            const int r = innerRowB + loadOffset;
            Bs[r * BN + innerColB] = bkIdx + r < K && innerColB < colsLeft ? B[r * N + innerColB] : 0.0f;
        }
        __syncthreads();
        A += BK;      // row unchanged, col += BK
        B += BK * N;  // row += BK, col unchanged

        for (int dotIdx = 0; dotIdx < BK; ++dotIdx) {
            for (int i = 0; i < TM; ++i) regM[i] = As[(threadRow * TM + i) * BK + dotIdx];
            for (int i = 0; i < TN; ++i) regN[i] = Bs[dotIdx * BN + threadCol * TN + i];
            for (int resIdxM = 0; resIdxM < TM; ++resIdxM)
                for (int resIdxN = 0; resIdxN < TN; ++resIdxN)
                    threadResults[resIdxM * TN + resIdxN] += regM[resIdxM] * regN[resIdxN];
        }
        __syncthreads();
    }
    for (int resIdxM = 0; resIdxM < TM; ++resIdxM)
        for (int resIdxN = 0; resIdxN < TN; ++resIdxN) {
            const int row = threadRow * TM + resIdxM;
            const int col = threadCol * TN + resIdxN;
            if (row < rowsLeft && col < colsLeft) C[row * N + col] = threadResults[resIdxM * TN + resIdxN];
        }
    // LAB 03 END
}

}  // namespace gl::kernels::cuda
