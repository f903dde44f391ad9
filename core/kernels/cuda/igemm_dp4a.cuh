/// @file
/// @brief An INT8 GEMM on CUDA cores: C (int32) = A B^T with A and B in int8, four
/// multiply-adds per `__dp4a` instruction.
///
/// `__dp4a(a, b, c)` reads each 32-bit register as four 8-bit integers and adds their four
/// products to c: a GPU without INT8 tensor cores does INT8 inference with it, four times
/// the multiply-adds of an FP32 FMA per instruction, and a quarter of the bytes per value
/// (claim Q-1). For the four values in a register to be four consecutive K values of both
/// operands, both must be K-contiguous: A is M x K row-major, and B is given as N x K
/// row-major, the way a Linear layer stores its weights (one row per output), so
/// C = A B^T. K must be a multiple of 4 (the host entry pads with zeros).
///
/// Otherwise it is the SGEMM family's version 3 (shared-memory tiles), in words: a 16 x 16
/// block computes a 16 x 16 tile of C, one element per thread; each step copies 16 rows of
/// A and 16 rows of B, 16 words (64 K values) each, into shared memory, one word per
/// thread per matrix, with consecutive threads on consecutive words (coalesced).
#pragma once

#include <cstdint>

#include "cuda_cpu/cuda_compat.hpp"

namespace gl::kernels::cuda {
namespace {  // internal: g++ (CPU runtime) and nvcc (GPU) each compile their own copy

/// The tile edge: a block is kDp4aTile x kDp4aTile threads, a step covers kDp4aTile words of K.
inline constexpr int kDp4aTile = 16;

/// C[M x N] = A[M x K] B[N x K]^T. Launch: block (16, 16), grid (ceil(N / 16), ceil(M / 16)).
__global__ void igemm_dp4a(int M, int N, int K, const std::int8_t* A, const std::int8_t* B, std::int32_t* C) {
    constexpr int T = kDp4aTile;
    // Row i of a tile holds T words of row i of A (or of B). One padding word per row puts
    // Bs[tx][w], read by 16 threads with different tx at once, in 16 different banks.
    __shared__ int As[T][T + 1];
    __shared__ int Bs[T][T + 1];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int words = K / 4;  // four K values per 32-bit word
    const int* A32 = reinterpret_cast<const int*>(A);
    const int* B32 = reinterpret_cast<const int*>(B);
    // The rows this thread copies (ty-th of the block's A rows and of its B rows) and the
    // element of C it computes (row of A, row of B).
    const int aRow = blockIdx.y * T + ty, bRow = blockIdx.x * T + ty;
    const int cRow = aRow, cCol = blockIdx.x * T + tx;

    int acc = 0;
    for (int w0 = 0; w0 < words; w0 += T) {
        const int w = w0 + tx;  // the word this thread copies; outside the matrices, zeros
        As[ty][tx] = aRow < M && w < words ? A32[std::size_t(aRow) * words + w] : 0;
        Bs[ty][tx] = bRow < N && w < words ? B32[std::size_t(bRow) * words + w] : 0;
        __syncthreads();  // the tiles are complete before anyone reads them
        for (int i = 0; i < T; ++i) acc = __dp4a(As[ty][i], Bs[tx][i], acc);  // 4 K values each
        __syncthreads();  // everyone is done with the tiles before the next step overwrites them
    }
    if (cRow < M && cCol < N) C[std::size_t(cRow) * N + cCol] = acc;
}

}  // namespace
}  // namespace gl::kernels::cuda
