// The 16-bit CUDA kernels compiled by nvcc: the element-wise ones (the same .cuh as
// lowp_cpu.cpp) and the WMMA tensor-core GEMM. Compiled in every build that finds nvcc,
// run only where a GPU is.
#include <cstddef>
#include <vector>

#include "base/error.hpp"
#include "kernels/cuda/hgemm_wmma.cuh"
#include "kernels/cuda/lowp.hpp"
#include "kernels/cuda/lowp_elementwise.cuh"

namespace gl::kernels {
namespace {

/// Device memory of n elements of T that frees itself.
template <class T>
struct DeviceBuffer {
    explicit DeviceBuffer(std::size_t n) : ptr(gl::cuda::malloc_n<T>(n)) {}
    ~DeviceBuffer() { cudaFree(ptr); }
    DeviceBuffer(const DeviceBuffer&) = delete;
    DeviceBuffer& operator=(const DeviceBuffer&) = delete;
    T* ptr;
};

int round16(int x) { return (x + 15) / 16 * 16; }

// rows x cols of src (row stride cols) into the top-left of a rows16 x cols16 zero matrix.
std::vector<std::uint16_t> pad(const std::uint16_t* src, int rows, int cols, int rows16, int cols16) {
    std::vector<std::uint16_t> out(std::size_t(rows16) * cols16, 0);
    for (int r = 0; r < rows; ++r)
        for (int c = 0; c < cols; ++c) out[std::size_t(r) * cols16 + c] = src[std::size_t(r) * cols + c];
    return out;
}

}  // namespace

void cuda_axpy_half_device_from_host(int n, float a, const std::uint16_t* x, std::uint16_t* y) {
    using gl::cuda::CopyKind;
    DeviceBuffer<__half> dx(n), dy(n);
    gl::cuda::memcpy(dx.ptr, x, n * sizeof(__half), CopyKind::host_to_device);
    gl::cuda::memcpy(dy.ptr, y, n * sizeof(__half), CopyKind::host_to_device);
    cuda::launch_axpy_lowp<__half>(n, a, dx.ptr, dy.ptr);
    gl::cuda::synchronize();
    gl::cuda::memcpy(y, dy.ptr, n * sizeof(__half), CopyKind::device_to_host);
}

void cuda_hgemm_wmma_device(int M, int N, int K, const void* A, const void* B, float* C) {
    check(M % 16 == 0 && N % 16 == 0 && K % 16 == 0, "hgemm_wmma: M, N and K must be multiples of 16");
    if (M == 0 || N == 0) return;
    const dim3 block(32, 4);
    const dim3 grid(N / 16, (M / 16 + 3) / 4);
    gl::cuda::launch(cuda::hgemm_wmma, grid, block, 0, M, N, K, static_cast<const __half*>(A),
                     static_cast<const __half*>(B), C);
}

void cuda_hgemm_wmma_device_from_host(int M, int N, int K, const std::uint16_t* A, const std::uint16_t* B,
                                      float* C) {
    using gl::cuda::CopyKind;
    const int M16 = round16(M), N16 = round16(N), K16 = round16(K);
    const auto a = pad(A, M, K, M16, K16), b = pad(B, K, N, K16, N16);
    DeviceBuffer<__half> dA(a.size()), dB(b.size());
    DeviceBuffer<float> dC(std::size_t(M16) * N16);
    gl::cuda::memcpy(dA.ptr, a.data(), a.size() * 2, CopyKind::host_to_device);
    gl::cuda::memcpy(dB.ptr, b.data(), b.size() * 2, CopyKind::host_to_device);
    cuda_hgemm_wmma_device(M16, N16, K16, dA.ptr, dB.ptr, dC.ptr);
    gl::cuda::synchronize();
    std::vector<float> c(std::size_t(M16) * N16);
    gl::cuda::memcpy(c.data(), dC.ptr, c.size() * sizeof(float), CopyKind::device_to_host);
    for (int r = 0; r < M; ++r)
        for (int col = 0; col < N; ++col) C[std::size_t(r) * N + col] = c[std::size_t(r) * N16 + col];
}

}  // namespace gl::kernels
