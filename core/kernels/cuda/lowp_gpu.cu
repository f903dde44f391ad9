// The 16-bit CUDA kernels compiled by nvcc: the element-wise ones (the same .cuh as
// lowp_cpu.cpp) and the WMMA tensor-core GEMM. Compiled in every build that finds nvcc,
// run only where a GPU is.
#include <cstddef>
#include <vector>

#include "base/error.hpp"
#include "cuda_cpu/streams.hpp"
#include "kernels/cuda/hgemm_wmma.cuh"
#include "kernels/cuda/lowp.hpp"
#include "kernels/cuda/lowp_elementwise.cuh"
#include "kernels/cuda/padded.hpp"

namespace gl::kernels {
using gl::cuda::DeviceBuffer;

void cuda_axpy_half_device_from_host(int n, float a, const std::uint16_t* x, std::uint16_t* y) {
    using gl::cuda::CopyKind;
    DeviceBuffer<__half> dx(n), dy(n);
    gl::cuda::memcpy(dx.data(), x, n * sizeof(__half), CopyKind::host_to_device);
    gl::cuda::memcpy(dy.data(), y, n * sizeof(__half), CopyKind::host_to_device);
    cuda::launch_axpy_lowp<__half>(n, a, dx.data(), dy.data());
    gl::cuda::synchronize();
    gl::cuda::memcpy(y, dy.data(), n * sizeof(__half), CopyKind::device_to_host);
}

void cuda_hgemm_wmma_device(int M, int N, int K, const void* A, const void* B, float* C) {
    check(M % 16 == 0 && N % 16 == 0 && K % 16 == 0,
          [] { return std::string("hgemm_wmma: M, N and K must be multiples of 16"); });  // no string per launch
    cuda::launch_hgemm_wmma(M, N, K, static_cast<const __half*>(A), static_cast<const __half*>(B), C);
}

void cuda_hgemm_wmma_device_from_host(int M, int N, int K, const std::uint16_t* A, const std::uint16_t* B,
                                      float* C) {
    using gl::cuda::CopyKind;
    const int M16 = cuda::round_up(M, 16), N16 = cuda::round_up(N, 16), K16 = cuda::round_up(K, 16);
    const auto a = cuda::padded(A, M, K, M16, K16), b = cuda::padded(B, K, N, K16, N16);
    DeviceBuffer<__half> dA(a.size()), dB(b.size());
    DeviceBuffer<float> dC(std::size_t(M16) * N16);
    gl::cuda::memcpy(dA.data(), a.data(), a.size() * 2, CopyKind::host_to_device);
    gl::cuda::memcpy(dB.data(), b.data(), b.size() * 2, CopyKind::host_to_device);
    cuda_hgemm_wmma_device(M16, N16, K16, dA.data(), dB.data(), dC.data());
    gl::cuda::synchronize();
    std::vector<float> c(std::size_t(M16) * N16);
    gl::cuda::memcpy(c.data(), dC.data(), c.size() * sizeof(float), CopyKind::device_to_host);
    cuda::crop(c, N16, M, N, C);
}

}  // namespace gl::kernels
