/// @file
/// @brief Version 6 of the CUDA SGEMM family: vectorized (16-byte) memory accesses.
///
/// Version 5 with wider accesses: each thread moves global data as float4, one 16-byte
/// load or store instead of four 4-byte ones (fewer instructions, and the memory system
/// likes them). The A tile is stored *transposed* in shared memory (As[k * BM + row]), so
/// the inner loop reads both tiles along contiguous addresses. A float4 access needs a
/// 16-byte aligned address, which rows of A (of B, C) have only when K (N) is a multiple of
/// 4; otherwise, and at the edges of the matrices, the helpers fall back to 4-byte accesses.
#pragma once

#include "cuda_cpu/cuda_compat.hpp"

namespace gl::kernels::cuda {

/// row[col], ..., row[col + 3], of which only the first @p valid exist (none if valid <= 0);
/// missing ones are zero. One 16-byte load when all four exist and the address is aligned.
template <class Ptr>
__device__ __forceinline__ float4 load_float4(Ptr row, int col, int valid, bool aligned) {
    if (valid >= 4 && aligned) return gl::cuda::reinterpret_ptr<float4>(row + col)[0];
    float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    if (valid > 0) v.x = row[col];
    if (valid > 1) v.y = row[col + 1];
    if (valid > 2) v.z = row[col + 2];
    if (valid > 3) v.w = row[col + 3];
    return v;
}

/// Stores the first @p valid components of @p v to row[col...]; one 16-byte store when all
/// four fit and the address is aligned.
template <class Ptr>
__device__ __forceinline__ void store_float4(Ptr row, int col, int valid, bool aligned, float4 v) {
    if (valid >= 4 && aligned) {
        gl::cuda::reinterpret_ptr<float4>(row + col)[0] = v;
        return;
    }
    if (valid > 0) row[col] = v.x;
    if (valid > 1) row[col + 1] = v.y;
    if (valid > 2) row[col + 2] = v.z;
    if (valid > 3) row[col + 3] = v.w;
}

/// C = A * B. Launch: block BM*BN/(TM*TN), grid (ceil(N/BN), ceil(M/BM)).
template <int BM, int BN, int BK, int TM, int TN, class Access = gl::cuda::Direct>
__global__ void sgemm_6_vectorized(int M, int N, int K, gl::cuda::global_ptr<Access, const float> A,
                                   gl::cuda::global_ptr<Access, const float> B,
                                   gl::cuda::global_ptr<Access, float> C) {
    constexpr int numThreads = (BM * BN) / (TM * TN);
    static_assert(TN % 4 == 0 && BK % 4 == 0 && BN % 4 == 0, "float4 accesses need multiples of 4");
    static_assert(numThreads % (BK / 4) == 0 && numThreads % (BN / 4) == 0,
                  "tile loads must divide evenly");
    alignas(16) __shared__ gl::cuda::shared_array<Access, float, BM * BK> As;  // transposed
    alignas(16) __shared__ gl::cuda::shared_array<Access, float, BK * BN> Bs;

    const int cRow = blockIdx.y;
    const int cCol = blockIdx.x;
    const int threadCol = threadIdx.x % (BN / TN);
    const int threadRow = threadIdx.x / (BN / TN);
    // Each thread loads one float4 of a tile per pass: the A tile has BK/4 of them per row.
    const int innerColA = threadIdx.x % (BK / 4);
    const int innerRowA = threadIdx.x / (BK / 4);
    constexpr int strideA = numThreads / (BK / 4);
    const int innerColB = threadIdx.x % (BN / 4);
    const int innerRowB = threadIdx.x / (BN / 4);
    constexpr int strideB = numThreads / (BN / 4);
    const int rowsLeft = M - cRow * BM;
    const int colsLeft = N - cCol * BN;
    // Rows start on 16-byte boundaries only when their length is a multiple of 4 floats.
    const bool alignedA = K % 4 == 0;
    const bool alignedBC = N % 4 == 0;

    A += cRow * BM * K;              // row=cRow*BM, col=0
    B += cCol * BN;                  // row=0, col=cCol*BN
    C += cRow * BM * N + cCol * BN;  // row=cRow*BM, col=cCol*BN

    float threadResults[TM * TN] = {0.0f};
    float regM[TM] = {0.0f};
    float regN[TN] = {0.0f};
    for (int bkIdx = 0; bkIdx < K; bkIdx += BK) {
        for (int loadOffset = 0; loadOffset < BM; loadOffset += strideA) {
            const int r = innerRowA + loadOffset;
            const int valid = r < rowsLeft ? K - bkIdx - innerColA * 4 : 0;
            const float4 tmp = load_float4(A + r * K, innerColA * 4, valid, alignedA);
            // Transpose while storing: column innerColA*4 + i of the tile becomes row i of As.
            As[(innerColA * 4 + 0) * BM + r] = tmp.x;
            As[(innerColA * 4 + 1) * BM + r] = tmp.y;
            As[(innerColA * 4 + 2) * BM + r] = tmp.z;
            As[(innerColA * 4 + 3) * BM + r] = tmp.w;
        }
        for (int loadOffset = 0; loadOffset < BK; loadOffset += strideB) {
            const int r = innerRowB + loadOffset;
            const int valid = bkIdx + r < K ? colsLeft - innerColB * 4 : 0;
            gl::cuda::reinterpret_ptr<float4>(&Bs[r * BN + innerColB * 4])[0] =
                load_float4(B + r * N, innerColB * 4, valid, alignedBC);
        }
        __syncthreads();
        A += BK;      // row unchanged, col += BK
        B += BK * N;  // row += BK, col unchanged

        for (int dotIdx = 0; dotIdx < BK; ++dotIdx) {
            for (int i = 0; i < TM; ++i) regM[i] = As[dotIdx * BM + threadRow * TM + i];
            for (int i = 0; i < TN; ++i) regN[i] = Bs[dotIdx * BN + threadCol * TN + i];
            for (int resIdxM = 0; resIdxM < TM; ++resIdxM)
                for (int resIdxN = 0; resIdxN < TN; ++resIdxN)
                    threadResults[resIdxM * TN + resIdxN] += regM[resIdxM] * regN[resIdxN];
        }
        __syncthreads();
    }
    for (int resIdxM = 0; resIdxM < TM; ++resIdxM) {
        const int row = threadRow * TM + resIdxM;
        if (row >= rowsLeft) break;
        for (int resIdxN = 0; resIdxN < TN; resIdxN += 4) {
            const int col = threadCol * TN + resIdxN;
            const float* r = &threadResults[resIdxM * TN + resIdxN];
            store_float4(C + row * N, col, colsLeft - col, alignedBC, make_float4(r[0], r[1], r[2], r[3]));
        }
    }
}

}  // namespace gl::kernels::cuda
