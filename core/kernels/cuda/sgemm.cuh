/// @file
/// @brief The CUDA SGEMM family: C = A * B for row-major float matrices (A is M x K, B is K x N),
/// one idea per version, after siboehm/SGEMM_CUDA. Each version is one small file:
///
///   version 1 (sgemm_1_naive.cuh): one thread per element of C; the threads of a warp walk
///             down a column of C, so their reads of A and writes of C are uncoalesced.
///   version 2 (sgemm_2_coalesced.cuh): the same work, but a warp's threads take neighbouring
///             columns: coalesced reads of B and writes of C, broadcast reads of A.
///   version 3 (sgemm_3_smem_tiled.cuh): 32 x 32 tiles of A and B staged in shared memory;
///             each element read from global memory serves 32 multiply-adds.
///   version 4 (sgemm_4_blocktiling_1d.cuh): each thread computes 8 elements of a column, so
///             one shared load of B serves 8 multiply-adds.
///   version 5 (sgemm_5_blocktiling_2d.cuh): each thread computes an 8 x 8 sub-tile as an
///             outer product of 8 + 8 registers: 64 multiply-adds per 16 shared loads.
///   version 6 (sgemm_6_vectorized.cuh): 16-byte (float4) global loads and stores, and A
///             transposed in shared memory so both tiles are read contiguously.
///
/// Every version is correct for any M, N, K (tiles at the edges are padded with zeros) and
/// is checked against a plain triple loop in double precision:
///   on the CPU runtime:  build/tests/cuda_cpu_tests --gtest_filter='CudaGemm*'
///   timing on the CPU:   build/bench/cuda_cpu_gemm_bench
///   on a GPU, vs cuBLAS: tools/gpu/run_gpu_checks.sh OUTPUT_FOLDER
///
/// This header is compiled twice: by g++ for the CPU runtime (sgemm_cpu.cpp) and by nvcc
/// for the GPU (sgemm_gpu.cu). launch_sgemm below is the host side, shared by both.
#pragma once

#include <string>

#include "base/error.hpp"
#include "cuda_cpu/cuda_compat.hpp"
#include "kernels/cuda/sgemm_1_naive.cuh"
#include "kernels/cuda/sgemm_2_coalesced.cuh"
#include "kernels/cuda/sgemm_3_smem_tiled.cuh"
#include "kernels/cuda/sgemm_4_blocktiling_1d.cuh"
#include "kernels/cuda/sgemm_5_blocktiling_2d.cuh"
#include "kernels/cuda/sgemm_6_vectorized.cuh"

namespace gl::kernels::cuda {

/// How many tiles of @p b cover @p a: grids are rounded up, and edge tiles are partly empty.
constexpr int ceil_div(int a, int b) { return (a + b - 1) / b; }

/// Launches version @p version for C = A * B on the runtime this file is compiled for.
/// A, B and C are device memory of that runtime. Access is gl::cuda::Direct, or on the CPU
/// runtime gl::cuda::Counted to count every memory access.
template <class Access>
void launch_sgemm(int version, int M, int N, int K, const float* A, const float* B, float* C) {
    if (M == 0 || N == 0) return;  // nothing to compute, and CUDA rejects an empty grid
    using gl::cuda::launch;
    switch (version) {
        case 1: {
            const dim3 block(32, 32);
            const dim3 grid(ceil_div(M, 32), ceil_div(N, 32));  // x over rows: the point of v1
            launch(sgemm_1_naive<Access>, grid, block, 0, M, N, K, A, B, C);
            return;
        }
        case 2: {
            constexpr int BS = 32;
            const dim3 grid(ceil_div(N, BS), ceil_div(M, BS));
            launch(sgemm_2_coalesced<BS, Access>, grid, dim3(BS * BS), 0, M, N, K, A, B, C);
            return;
        }
        case 3: {
            constexpr int BS = 32;
            const dim3 grid(ceil_div(N, BS), ceil_div(M, BS));
            launch(sgemm_3_smem_tiled<BS, Access>, grid, dim3(BS * BS), 0, M, N, K, A, B, C);
            return;
        }
        case 4: {
            constexpr int BM = 64, BN = 64, BK = 8, TM = 8;
            const dim3 grid(ceil_div(N, BN), ceil_div(M, BM));
            launch(sgemm_4_blocktiling_1d<BM, BN, BK, TM, Access>, grid, dim3(BM * BN / TM), 0, M,
                   N, K, A, B, C);
            return;
        }
        case 5: {
            constexpr int BM = 128, BN = 128, BK = 8, TM = 8, TN = 8;
            const dim3 grid(ceil_div(N, BN), ceil_div(M, BM));
            launch(sgemm_5_blocktiling_2d<BM, BN, BK, TM, TN, Access>, grid,
                   dim3(BM * BN / (TM * TN)), 0, M, N, K, A, B, C);
            return;
        }
        case 6: {
            constexpr int BM = 128, BN = 128, BK = 8, TM = 8, TN = 8;
            const dim3 grid(ceil_div(N, BN), ceil_div(M, BM));
            launch(sgemm_6_vectorized<BM, BN, BK, TM, TN, Access>, grid,
                   dim3(BM * BN / (TM * TN)), 0, M, N, K, A, B, C);
            return;
        }
        default:
            throw gl::Error("cuda_gemm: there is no version " + std::to_string(version) +
                            "; the versions are 1 to 6 (core/kernels/cuda/sgemm.cuh)");
    }
}

}  // namespace gl::kernels::cuda
