// The CUDA SGEMM family compiled by nvcc for the GPU: the same .cuh files g++ compiles in
// sgemm_cpu.cpp. Compiled in every build that finds nvcc, run only where a GPU is.
#include <algorithm>
#include <cstddef>
#include <vector>

#include "kernels/cuda/sgemm.cuh"
#include "kernels/cuda/sgemm.hpp"

namespace gl::kernels {

void cuda_gemm_device(int version, int M, int N, int K, const float* A, const float* B, float* C) {
    cuda::launch_sgemm<gl::cuda::Direct>(version, M, N, K, A, B, C);
}

namespace {
/// Device memory that frees itself.
struct DeviceArray {
    explicit DeviceArray(std::size_t n) : ptr(gl::cuda::malloc_n<float>(n)) {}
    ~DeviceArray() { cudaFree(ptr); }
    DeviceArray(const DeviceArray&) = delete;
    DeviceArray& operator=(const DeviceArray&) = delete;
    float* ptr;
};
}  // namespace

void cuda_gemm_device_from_host(int version, int M, int N, int K, const float* A, const float* B,
                                float* C) {
    using gl::cuda::CopyKind;
    const std::size_t a = std::size_t(M) * K, b = std::size_t(K) * N, c = std::size_t(M) * N;
    DeviceArray dA(a), dB(b), dC(c);
    gl::cuda::memcpy(dA.ptr, A, a * sizeof(float), CopyKind::host_to_device);
    gl::cuda::memcpy(dB.ptr, B, b * sizeof(float), CopyKind::host_to_device);
    cuda_gemm_device(version, M, N, K, dA.ptr, dB.ptr, dC.ptr);
    gl::cuda::synchronize();
    gl::cuda::memcpy(C, dC.ptr, c * sizeof(float), CopyKind::device_to_host);
}

double cuda_gemm_device_seconds(int version, int M, int N, int K, int repeats) {
    const std::size_t a = std::size_t(M) * K, b = std::size_t(K) * N, c = std::size_t(M) * N;
    DeviceArray dA(a), dB(b), dC(c);
    // The values do not change the time of a float multiply-add; ones keep the sums finite.
    const std::vector<float> ones(std::max(a, b), 1.0f);
    gl::cuda::memcpy(dA.ptr, ones.data(), a * sizeof(float), gl::cuda::CopyKind::host_to_device);
    gl::cuda::memcpy(dB.ptr, ones.data(), b * sizeof(float), gl::cuda::CopyKind::host_to_device);
    cuda_gemm_device(version, M, N, K, dA.ptr, dB.ptr, dC.ptr);  // warm-up: first-launch costs, clocks
    gl::cuda::synchronize();
    gl::cuda::Event start, stop;
    std::vector<double> seconds;
    for (int r = 0; r < std::max(repeats, 1); ++r) {
        start.record();
        cuda_gemm_device(version, M, N, K, dA.ptr, dB.ptr, dC.ptr);
        stop.record();
        stop.synchronize();
        seconds.push_back(gl::cuda::Event::elapsed_ms(start, stop) * 1e-3);
    }
    std::sort(seconds.begin(), seconds.end());
    return seconds[seconds.size() / 2];
}

}  // namespace gl::kernels
