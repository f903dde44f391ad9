// Streams, asynchronous copies and page-locked host memory on a real GPU: thin forwards to
// cudart that throw gl::cuda::Error.
#include <atomic>

#include "cuda_cpu/streams.hpp"

namespace gl::cuda {
inline namespace gpu {
namespace {

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
}  // namespace gl::cuda
