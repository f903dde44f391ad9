// The device memory bandwidth for MEM-3 (see device_bandwidth.hpp).
#include "device_bandwidth.hpp"

#include <vector>

#include "cuda_cpu/host_api.hpp"
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

}  // namespace gl::claims
