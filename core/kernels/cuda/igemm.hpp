/// @file
/// @brief Host entry points of the CUDA INT8 GEMMs (claim Q-1): C (int32) = A B^T with
/// A (M x K) and B (N x K) int8 row-major, by `__dp4a` on CUDA cores (igemm_dp4a.cuh) or by
/// INT8 WMMA on tensor cores (igemm_wmma.cuh), on the CPU runtime or on a GPU.
///
/// B is N x K because that is how a Linear layer stores its weights and how both kernels
/// (and cuBLASLt's INT8 matmul) want it: K contiguous in both operands. Plain C++: no CUDA
/// type appears here.
#pragma once

#include <cstdint>

namespace gl::kernels {

/// The CUDA INT8 GEMM kernels, in the order of the lecture.
enum class CudaIgemm {
    dp4a,  ///< CUDA cores: four 8-bit multiply-adds per __dp4a, shared-memory tiles
    wmma,  ///< tensor cores: 16 x 16 x 16 INT8 mma_sync per warp
};

/// "dp4a" or "wmma".
inline const char* name_of(CudaIgemm kernel) { return kernel == CudaIgemm::dp4a ? "dp4a" : "wmma"; }

/// C = A B^T on the CPU runtime, from host arrays of any sizes (padded to the kernel's tile
/// on the way): A is M x K, B is N x K, C is M x N, all row-major. Sums are exact int32.
void cuda_igemm(CudaIgemm kernel, int M, int N, int K, const std::int8_t* A, const std::int8_t* B,
                std::int32_t* C);

/// The same on a GPU, from host arrays (copied there and back). Builds with nvcc only
/// (GRADLAB_HAVE_CUDA); throws gl::cuda::Error without a device.
void cuda_igemm_device_from_host(CudaIgemm kernel, int M, int N, int K, const std::int8_t* A,
                                 const std::int8_t* B, std::int32_t* C);

/// The same on device memory, queued like a launch: M, N and K multiples of 16 for wmma; K a
/// multiple of 4 for dp4a, whose 32-bit loads also need A and B 4-byte aligned (cudaMalloc's
/// are). Builds with nvcc only.
void cuda_igemm_device(CudaIgemm kernel, int M, int N, int K, const void* A, const void* B, std::int32_t* C);

}  // namespace gl::kernels
