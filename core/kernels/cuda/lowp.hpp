/// @file
/// @brief Host entry points of the 16-bit CUDA kernels: element-wise axpy on half and
/// bfloat16 storage (lowp_elementwise.cuh), on the CPU runtime or a GPU, and the
/// tensor-core GEMM (hgemm_wmma.cuh: FP16 inputs, FP32 accumulation), on a GPU or on the
/// CPU runtime (whose WMMA is cuda_cpu/wmma.hpp).
///
/// Plain C++: 16-bit arrays are passed as their bit patterns (std::uint16_t).
#pragma once

#include <cstdint>

namespace gl::kernels {

/// y = a x + y on half storage, on the CPU runtime (any host memory).
void cuda_axpy_half(int n, float a, const std::uint16_t* x, std::uint16_t* y);
/// y = a x + y on bfloat16 storage, on the CPU runtime.
void cuda_axpy_bf16(int n, float a, const std::uint16_t* x, std::uint16_t* y);

/// The same on a GPU, from host arrays (copied there and back). Builds with nvcc only
/// (GRADLAB_HAVE_CUDA); throws gl::cuda::Error without a device.
void cuda_axpy_half_device_from_host(int n, float a, const std::uint16_t* x, std::uint16_t* y);

/// C = A B with the WMMA kernel on the CPU runtime, from host arrays: A is M x K, B is K x N
/// (FP16 bit patterns), C is M x N, all row-major; any sizes (padded to multiples of 16).
void cuda_hgemm_wmma(int M, int N, int K, const std::uint16_t* A, const std::uint16_t* B, float* C);

/// C = A B on a GPU's tensor cores (WMMA 16x16x16, FP16 inputs, FP32 accumulation and
/// result), from host arrays: A is M x K, B is K x N, C is M x N, all row-major; any sizes
/// (padded to multiples of 16 on the way). Builds with nvcc only; throws without a device.
void cuda_hgemm_wmma_device_from_host(int M, int N, int K, const std::uint16_t* A, const std::uint16_t* B,
                                      float* C);

/// C = A B with the WMMA kernel on device memory: M, N, K multiples of 16, A and B half
/// bit patterns on the device, C float on the device. Queued like a launch.
void cuda_hgemm_wmma_device(int M, int N, int K, const void* A, const void* B, float* C);

}  // namespace gl::kernels
