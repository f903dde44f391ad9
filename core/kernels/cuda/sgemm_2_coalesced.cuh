/// @file
/// @brief Version 2 of the CUDA SGEMM family: global memory coalescing.
///
/// The same work per thread as version 1, but the 32 threads of a warp now take 32
/// neighbouring *columns* of one row of C. In each step of the k loop the warp reads one
/// element of A (the same for all 32 threads: one sector, broadcast) and 32 consecutive
/// elements of B (4 sectors, every byte used), and it writes 32 consecutive elements of C.
/// Nothing else changed; on a GPU this alone is several times faster.
#pragma once

#include "cuda_cpu/cuda_compat.hpp"

namespace gl::kernels::cuda {

/// C = A * B. Launch: block BLOCKSIZE*BLOCKSIZE, grid (ceil(N/BLOCKSIZE), ceil(M/BLOCKSIZE)).
template <int BLOCKSIZE, class Access = gl::cuda::Direct>
__global__ void sgemm_2_coalesced(int M, int N, int K, gl::cuda::global_ptr<Access, const float> A,
                                  gl::cuda::global_ptr<Access, const float> B,
                                  gl::cuda::global_ptr<Access, float> C) {
    // LAB 03 BEGIN: coalesced kernel
    // The work of sgemm_1_naive.cuh (one element of C per thread: a dot product of a row of
    // A, A[row * K + k], and a column of B, B[k * N + col]), with other indices. The block
    // is one-dimensional: BLOCKSIZE * BLOCKSIZE threads compute the BLOCKSIZE x BLOCKSIZE
    // tile of C at tile row blockIdx.y and tile column blockIdx.x. Consecutive threadIdx.x
    // form a warp, and threadIdx.x % BLOCKSIZE changes fastest: let it pick the *column*,
    // so a warp reads 32 consecutive floats of B and writes 32 consecutive floats of C.
    // M and N need not be multiples of BLOCKSIZE: threads outside C do nothing.
    const int cRow = blockIdx.y * BLOCKSIZE + threadIdx.x / BLOCKSIZE;
    const int cCol = blockIdx.x * BLOCKSIZE + threadIdx.x % BLOCKSIZE;
    if (cRow < M && cCol < N) {
        float acc = 0.0f;
        for (int k = 0; k < K; ++k) acc += A[cRow * K + k] * B[k * N + cCol];
        C[cRow * N + cCol] = acc;
    }
    // LAB 03 END
}

}  // namespace gl::kernels::cuda
