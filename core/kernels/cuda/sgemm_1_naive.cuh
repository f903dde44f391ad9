/// @file
/// @brief Version 1 of the CUDA SGEMM family: one thread per element of C.
///
/// The two outer loops of the triple loop become the grid; each thread runs the inner loop,
/// a dot product of a row of A and a column of B. Obviously right, and slow for a reason
/// worth seeing: threadIdx.x, which numbers the 32 threads of a warp, picks the *row* of C.
/// In each step of the k loop a warp therefore reads 32 elements of A that are K floats
/// apart (32 sectors of 32 bytes for 128 useful bytes) and, at the end, writes C down a
/// column (the same waste). Version 2 swaps the roles of rows and columns.
#pragma once

#include "cuda_cpu/cuda_compat.hpp"

namespace gl::kernels::cuda {

/// C = A * B. Launch: block (32, 32), grid (ceil(M/32), ceil(N/32)).
template <class Access = gl::cuda::Direct>
__global__ void sgemm_1_naive(int M, int N, int K, gl::cuda::global_ptr<Access, const float> A,
                              gl::cuda::global_ptr<Access, const float> B,
                              gl::cuda::global_ptr<Access, float> C) {
    const int row = blockIdx.x * blockDim.x + threadIdx.x;  // neighbouring threads: neighbouring rows
    const int col = blockIdx.y * blockDim.y + threadIdx.y;
    if (row < M && col < N) {  // the grid is rounded up to whole blocks
        float acc = 0.0f;
        for (int k = 0; k < K; ++k) acc += A[row * K + k] * B[k * N + col];
        C[row * N + col] = acc;
    }
}

}  // namespace gl::kernels::cuda
