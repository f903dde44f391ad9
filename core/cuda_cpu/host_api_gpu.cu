// The host API on a real GPU, streams and pinned memory included: thin forwards to cudart
// that throw gl::cuda::Error.
#include <atomic>
#include <string>

#include "cuda_cpu/device_status.hpp"
#include "cuda_cpu/host_api.hpp"
#include "cuda_cpu/launch.hpp"
#include "cuda_cpu/streams.hpp"

namespace gl::cuda {
inline namespace gpu {
namespace {

ErrorCode code_of(cudaError_t status) {
    switch (status) {
        case cudaErrorInvalidValue: return ErrorCode::invalid_value;
        case cudaErrorMemoryAllocation: return ErrorCode::memory_allocation;
        case cudaErrorInvalidDevicePointer: return ErrorCode::invalid_device_pointer;
        case cudaErrorInvalidConfiguration: return ErrorCode::invalid_configuration;
        case cudaErrorNoDevice:
        case cudaErrorInsufficientDriver: return ErrorCode::no_device;
        case cudaErrorLaunchFailure:
        case cudaErrorIllegalAddress: return ErrorCode::launch_failure;
        default: return ErrorCode::unknown;
    }
}

cudaMemcpyKind kind_of(CopyKind kind) {
    switch (kind) {
        case CopyKind::host_to_host: return cudaMemcpyHostToHost;
        case CopyKind::host_to_device: return cudaMemcpyHostToDevice;
        case CopyKind::device_to_host: return cudaMemcpyDeviceToHost;
        case CopyKind::device_to_device: return cudaMemcpyDeviceToDevice;
    }
    return cudaMemcpyDefault;
}

std::atomic<int> next_stream_id{1};

}  // namespace

void check(cudaError_t status, const char* what) {
    if (status != cudaSuccess)
        throw Error(code_of(status), std::string(what) + ": " + cudaGetErrorName(status) + ": " +
                                         cudaGetErrorString(status));
}

void* malloc(std::size_t bytes) {
    if (bytes == 0) return nullptr;
    void* p = nullptr;
    check(cudaMalloc(&p, bytes), "cudaMalloc");
    return p;
}

void free(void* device_ptr) { check(cudaFree(device_ptr), "cudaFree"); }

void memcpy(void* dst, const void* src, std::size_t bytes, CopyKind kind) {
    check(cudaMemcpy(dst, src, bytes, kind_of(kind)), "cudaMemcpy");
}

void memset(void* device_ptr, int value, std::size_t bytes) {
    check(cudaMemset(device_ptr, value, bytes), "cudaMemset");
}

void synchronize() { check(cudaDeviceSynchronize(), "cudaDeviceSynchronize"); }

std::string device_name() {
    int device = 0;
    check(cudaGetDevice(&device), "cudaGetDevice");
    cudaDeviceProp prop{};
    check(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties");
    return prop.name;
}

Event::Event() { check(cudaEventCreate(&event_), "cudaEventCreate"); }
Event::~Event() { cudaEventDestroy(event_); }
void Event::record() { check(cudaEventRecord(event_), "cudaEventRecord"); }
void Event::record(Stream& stream) {
    check(cudaEventRecord(event_, stream.handle()), "cudaEventRecord");
}
bool Event::query() const {
    const cudaError_t status = cudaEventQuery(event_);
    if (status == cudaErrorNotReady) return false;
    check(status, "cudaEventQuery");
    return true;
}
void Event::synchronize() { check(cudaEventSynchronize(event_), "cudaEventSynchronize"); }
float Event::elapsed_ms(const Event& start, const Event& stop) {
    float ms = 0;
    check(cudaEventElapsedTime(&ms, start.event_, stop.event_), "cudaEventElapsedTime");
    return ms;
}

// ---- streams, asynchronous copies, page-locked memory (streams.hpp) ----

Stream::Stream() : id_(next_stream_id++) {
    // Non-blocking: like the CPU runtime's streams, it does not wait for the default stream.
    check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
}

Stream::~Stream() {
    cudaStreamSynchronize(stream_);
    cudaStreamDestroy(stream_);
}

void Stream::synchronize() { check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize"); }

void Stream::wait(const Event& event) {
    check(cudaStreamWaitEvent(stream_, event.handle(), 0), "cudaStreamWaitEvent");
}

void default_stream_wait(const Event& event) {
    check(cudaStreamWaitEvent(nullptr, event.handle(), 0), "cudaStreamWaitEvent");
}

void memcpy_async(void* dst, const void* src, std::size_t bytes, CopyKind kind, Stream& stream) {
    check(cudaMemcpyAsync(dst, src, bytes, kind_of(kind), stream.handle()), "cudaMemcpyAsync");
}

void* host_alloc(std::size_t bytes) {
    if (bytes == 0) return nullptr;
    void* p = nullptr;
    check(cudaHostAlloc(&p, bytes, cudaHostAllocDefault), "cudaHostAlloc");
    return p;
}

void host_free(void* host_ptr) { check(cudaFreeHost(host_ptr), "cudaFreeHost"); }

}  // namespace gpu

DeviceStatus device_status() {
    static const DeviceStatus status = [] {
        DeviceStatus s;
        int count = 0;
        const cudaError_t e = cudaGetDeviceCount(&count);
        if (e != cudaSuccess) {
            s.message = std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e);
            cudaGetLastError();  // clear the sticky error
            return s;
        }
        if (count == 0) {
            s.message = "the driver reports no CUDA devices";
            return s;
        }
        cudaDeviceProp prop{};
        if (cudaGetDeviceProperties(&prop, 0) != cudaSuccess) {
            s.message = "cudaGetDeviceProperties failed";
            return s;
        }
        s.available = true;
        s.name = prop.name;
        s.compute_capability = prop.major * 10 + prop.minor;
        s.message = "ok";
        return s;
    }();
    return status;
}

}  // namespace gl::cuda
