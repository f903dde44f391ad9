// The CUDA INT8 GEMMs compiled by nvcc (the same .cuh files as igemm_cpu.cpp). Compiled in
// every build that finds nvcc, run only where a GPU is.
#include "cuda_cpu/streams.hpp"
#include "kernels/cuda/igemm.cuh"

namespace gl::kernels {

void cuda_igemm_device(CudaIgemm kernel, int M, int N, int K, const void* A, const void* B, std::int32_t* C) {
    cuda::launch_igemm(kernel, M, N, K, static_cast<const std::int8_t*>(A), static_cast<const std::int8_t*>(B), C);
}

void cuda_igemm_device_from_host(CudaIgemm kernel, int M, int N, int K, const std::int8_t* A,
                                 const std::int8_t* B, std::int32_t* C) {
    using gl::cuda::CopyKind;
    cuda::PaddedIgemm p = cuda::pad_igemm(kernel, M, N, K, A, B);
    gl::cuda::DeviceBuffer<std::int8_t> dA(p.a.size()), dB(p.b.size());
    gl::cuda::DeviceBuffer<std::int32_t> dC(p.c.size());
    gl::cuda::memcpy(dA.data(), p.a.data(), p.a.size(), CopyKind::host_to_device);
    gl::cuda::memcpy(dB.data(), p.b.data(), p.b.size(), CopyKind::host_to_device);
    cuda_igemm_device(kernel, p.M, p.N, p.K, dA.data(), dB.data(), dC.data());
    gl::cuda::synchronize();
    gl::cuda::memcpy(p.c.data(), dC.data(), p.c.size() * sizeof(std::int32_t), CopyKind::device_to_host);
    cuda::crop(p.c, p.N, M, N, C);
}

}  // namespace gl::kernels
