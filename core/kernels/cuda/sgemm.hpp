/// @file
/// @brief Host entry points of the CUDA SGEMM family (core/kernels/cuda/sgemm.cuh): run a
/// version on the CPU runtime, counted on the CPU runtime, or on a GPU.
///
/// Plain C++: include it from code compiled by any compiler. The kernels themselves are in
/// the .cuh files; this header only names the versions and the entry points.
#pragma once

#include <vector>

#include "kernels/gemm.hpp"

namespace gl::kernels {

/// One version of the CUDA SGEMM family.
struct CudaSgemmVersion {
    int number;        ///< 1, 2, ...
    const char* name;  ///< the kernel, e.g. "sgemm_3_smem_tiled"
    const char* idea;  ///< what it adds over the previous version, one line
};

/// The versions, in order.
const std::vector<CudaSgemmVersion>& cuda_sgemm_versions();

/// The version the GEMM registry's CUDA kernels ("cuda", "cuda_cpu") run: the last one,
/// which adds every idea of the family and is the fastest on a GPU.
int cuda_sgemm_best_version();

/// C = A * B (row-major; A is M x K, B is K x N, C is M x N, overwritten) with version
/// @p version on the CPU runtime. Any host memory works there; gl::cuda::malloc memory too.
void cuda_gemm(int version, int M, int N, int K, const float* A, const float* B, float* C);

/// C = op(A) * op(B) in the GEMM registry's convention (kernels/gemm.hpp: transposes, row
/// strides) with version @p version on the CPU runtime. Operands that are transposed or
/// strided are first copied into contiguous row-major arrays on the host. The registry's
/// "cuda_cpu" kernel is this with cuda_sgemm_best_version(); lab 03 registers its own.
void cuda_gemm_strided(int version, const GemmArgs<float>& args);

/// The same as cuda_gemm, with every global and shared access counted
/// (gl::cuda::cpu::memory_counters()). Much slower; for small problems.
void cuda_gemm_counted(int version, int M, int N, int K, const float* A, const float* B, float* C);

/// The same on the GPU (builds with nvcc only: GRADLAB_HAVE_CUDA). A, B and C are device
/// memory (cudaMalloc). Returns once the kernel is queued, like a CUDA launch.
void cuda_gemm_device(int version, int M, int N, int K, const float* A, const float* B, float* C);

/// For host code compiled without nvcc (tests): copies host arrays A and B to the GPU, runs
/// version @p version, and copies C back. Throws gl::cuda::Error (code no_device) without a GPU.
void cuda_gemm_device_from_host(int version, int M, int N, int K, const float* A, const float* B,
                                float* C);

/// Seconds one launch of version @p version takes on the GPU for C = A * B, the operands
/// already in device memory (no copies timed): the median of @p repeats launches timed with
/// CUDA events, after one warm-up launch. Builds with nvcc only; throws gl::cuda::Error
/// (code no_device) without a GPU. For host code compiled without nvcc (the claims report).
double cuda_gemm_device_seconds(int version, int M, int N, int K, int repeats);

/// The family behind the GEMM registry: "cuda_cpu" (the best version on the CPU runtime)
/// and "cuda" (on the GPU; unavailable without one). The registry lists them after the
/// CPU family and its peers.
std::vector<GemmKernel> cuda_gemm_kernels();

}  // namespace gl::kernels
