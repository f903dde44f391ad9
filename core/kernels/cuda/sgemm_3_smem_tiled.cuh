/// @file
/// @brief Version 3 of the CUDA SGEMM family: tiles in shared memory.
///
/// In version 2 every element of A and B is read from global memory once per thread that
/// needs it: M*N*K times each. Here a block first copies a BLOCKSIZE x BLOCKSIZE tile of A
/// and one of B into shared memory (each thread copies one element of each), waits for the
/// whole block, and then computes from the tiles. Each element fetched from global memory
/// now serves BLOCKSIZE multiply-adds, so global traffic drops by the tile factor:
/// 2*M*N*K/BLOCKSIZE loads instead of 2*M*N*K (tests/cuda_cpu/test_cuda_gemm.cpp counts them).
#pragma once

#include "cuda_cpu/cuda_compat.hpp"

namespace gl::kernels::cuda {

/// C = A * B. Launch: block BLOCKSIZE*BLOCKSIZE, grid (ceil(N/BLOCKSIZE), ceil(M/BLOCKSIZE)).
template <int BLOCKSIZE, class Access = gl::cuda::Direct>
__global__ void sgemm_3_smem_tiled(int M, int N, int K, gl::cuda::global_ptr<Access, const float> A,
                                   gl::cuda::global_ptr<Access, const float> B,
                                   gl::cuda::global_ptr<Access, float> C) {
    // LAB 03 BEGIN: shared-memory tiled kernel
    // Launch as in version 2: BLOCKSIZE * BLOCKSIZE threads compute the tile of C at tile row
    // blockIdx.y and tile column blockIdx.x; thread threadIdx.x owns element
    // (threadIdx.x / BLOCKSIZE, threadIdx.x % BLOCKSIZE) of it. Two tiles in shared memory:
    //   __shared__ gl::cuda::shared_array<Access, float, BLOCKSIZE * BLOCKSIZE> As;  (and Bs)
    // (float[N] on a GPU; the tests' counted build counts every access to it).
    // Walk k in steps of BLOCKSIZE. In each step every thread copies one element of the A
    // tile and one of the B tile, at its own (row, column) of the tile, so that a warp reads
    // consecutive addresses; outside the matrices it stores 0. __syncthreads() before anyone
    // reads the tiles; add your BLOCKSIZE products from As and Bs; __syncthreads() again
    // before the next step overwrites them. Write your element if it lies inside C.
    // Pointer arithmetic on A, B and C (A += BLOCKSIZE) works on every Access.
    __shared__ gl::cuda::shared_array<Access, float, BLOCKSIZE * BLOCKSIZE> As;
    __shared__ gl::cuda::shared_array<Access, float, BLOCKSIZE * BLOCKSIZE> Bs;

    // This block computes tile (cRow, cCol) of C; this thread its element (threadRow, threadCol).
    const int cRow = blockIdx.y;
    const int cCol = blockIdx.x;
    const int threadRow = threadIdx.x / BLOCKSIZE;
    const int threadCol = threadIdx.x % BLOCKSIZE;
    // How much of the tile lies inside C (less than BLOCKSIZE at the bottom and right edges).
    const int rowsLeft = M - cRow * BLOCKSIZE;
    const int colsLeft = N - cCol * BLOCKSIZE;

    A += cRow * BLOCKSIZE * K;                     // row=cRow*BLOCKSIZE, col=0
    B += cCol * BLOCKSIZE;                         // row=0, col=cCol*BLOCKSIZE
    C += cRow * BLOCKSIZE * N + cCol * BLOCKSIZE;  // row=cRow*BLOCKSIZE, col=cCol*BLOCKSIZE

    float acc = 0.0f;
    for (int bkIdx = 0; bkIdx < K; bkIdx += BLOCKSIZE) {
        // Each thread loads one element of each tile; threadCol changes fastest, so a
        // warp's loads are coalesced. Outside the matrices it stores zeros, which add
        // nothing to the dot products.
        As[threadRow * BLOCKSIZE + threadCol] =
            threadRow < rowsLeft && bkIdx + threadCol < K ? A[threadRow * K + threadCol] : 0.0f;
        Bs[threadRow * BLOCKSIZE + threadCol] =
            bkIdx + threadRow < K && threadCol < colsLeft ? B[threadRow * N + threadCol] : 0.0f;
        __syncthreads();  // the tiles are complete before anyone reads them
        A += BLOCKSIZE;      // row unchanged, col += BLOCKSIZE
        B += BLOCKSIZE * N;  // row += BLOCKSIZE, col unchanged

        for (int dotIdx = 0; dotIdx < BLOCKSIZE; ++dotIdx)
            acc += As[threadRow * BLOCKSIZE + dotIdx] * Bs[dotIdx * BLOCKSIZE + threadCol];
        __syncthreads();  // everyone is done with the tiles before the next ones overwrite them
    }
    if (threadRow < rowsLeft && threadCol < colsLeft) C[threadRow * N + threadCol] = acc;
    // LAB 03 END
}

}  // namespace gl::kernels::cuda
