// The device memory bandwidth for MEM-3 (see device_bandwidth.hpp).
#include "device_bandwidth.hpp"

#include <algorithm>
#include <vector>

#include "cuda_cpu/host_api.hpp"
#include "cuda_cpu/launch.hpp"
#include "testkit/timing.hpp"

namespace gl::claims {

namespace {
/// Device memory that frees itself.
struct DeviceBuffer {
    explicit DeviceBuffer(std::size_t bytes) : ptr(gl::cuda::malloc(bytes)) {}
    ~DeviceBuffer() { gl::cuda::free(ptr); }
    DeviceBuffer(const DeviceBuffer&) = delete;
    DeviceBuffer& operator=(const DeviceBuffer&) = delete;
    void* ptr;
};
/// STREAM's triad: one thread per element, grid-stride, so any grid covers any size.
__global__ void triad(std::size_t n, float s, const float* b, const float* c, float* a) {
    const std::size_t stride = std::size_t(gridDim.x) * blockDim.x;
    for (std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) a[i] = b[i] + s * c[i];
}

}  // namespace

double device_copy_gbs(std::size_t bytes, int repeats) {
    DeviceBuffer src(bytes), dst(bytes);
    gl::cuda::memset(src.ptr, 1, bytes);
    // Warm-up: first-touch of the pages, clocks up.
    gl::cuda::memcpy(dst.ptr, src.ptr, bytes, gl::cuda::CopyKind::device_to_device);
    gl::cuda::synchronize();
    gl::cuda::Event start, stop;
    std::vector<double> seconds;
    for (int r = 0; r < std::max(repeats, 1); ++r) {
        start.record();
        gl::cuda::memcpy(dst.ptr, src.ptr, bytes, gl::cuda::CopyKind::device_to_device);
        stop.record();
        stop.synchronize();
        seconds.push_back(gl::cuda::Event::elapsed_ms(start, stop) * 1e-3);
    }
    const double copy_bytes = 2.0 * static_cast<double>(bytes);  // each byte read once and written once
    return copy_bytes / testkit::median(seconds) * 1e-9;
}

double device_triad_gbs(std::size_t bytes, int repeats) {
    const std::size_t n = bytes / sizeof(float);
    DeviceBuffer a(n * sizeof(float)), b(n * sizeof(float)), c(n * sizeof(float));
    gl::cuda::memset(b.ptr, 0, n * sizeof(float));
    gl::cuda::memset(c.ptr, 0, n * sizeof(float));
    auto run = [&] {
        gl::cuda::launch(triad, dim3(4096), dim3(256), 0, n, 3.0f, static_cast<const float*>(b.ptr),
                         static_cast<const float*>(c.ptr), static_cast<float*>(a.ptr));
    };
    run();  // warm-up
    gl::cuda::synchronize();
    gl::cuda::Event start, stop;
    std::vector<double> seconds;
    for (int r = 0; r < std::max(repeats, 1); ++r) {
        start.record();
        run();
        stop.record();
        stop.synchronize();
        seconds.push_back(gl::cuda::Event::elapsed_ms(start, stop) * 1e-3);
    }
    return 3.0 * static_cast<double>(n * sizeof(float)) / testkit::median(seconds) * 1e-9;
}

}  // namespace gl::claims
