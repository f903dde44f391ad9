/// @file
/// @brief Streams, asynchronous copies and launches, and page-locked host memory: one
/// spelling for both runtimes (cudaStreamCreate, cudaMemcpyAsync, kernel<<<g, b, s, stream>>>,
/// cudaStreamWaitEvent, cudaHostAlloc).
///
/// A stream is a queue of work that runs in order; work on different streams may run at
/// the same time. On a GPU the copy engines move data while the multiprocessors run
/// kernels, so a copy on one stream overlaps a kernel on another. On the CPU runtime each
/// stream has its own worker thread that runs its queue in order, so the overlap is real in
/// wall time there too, and the runtime can record it (timeline.hpp). Kernels of different
/// streams take turns on the runtime's block workers (one grid at a time), as kernels that
/// each fill a GPU do.
///
/// Streams here behave like CUDA's non-blocking streams: they do not wait for the default
/// stream, nor it for them. Order work between streams with events (Event::record(stream),
/// Stream::wait(event); Event::record() and default_stream_wait(event) for the default
/// stream) and wait for it on the host with Stream::synchronize, Event::synchronize or
/// gl::cuda::synchronize.
///
/// Copies need page-locked host memory (host_alloc) to be asynchronous: from pageable
/// memory a GPU first copies into a page-locked staging buffer, with the host waiting, and
/// so does the CPU runtime (memcpy_async returns only when the copy is done).
#pragma once

#include <cstddef>
#include <memory>
#include <tuple>
#include <type_traits>
#include <utility>

#include "cuda_cpu/host_api.hpp"
#include "cuda_cpu/launch.hpp"

#if defined(__CUDACC__)
#include <cuda_runtime.h>

namespace gl::cuda {
inline namespace gpu {

/// An ordered queue of device work (cudaStreamCreateWithFlags(cudaStreamNonBlocking)).
class Stream {
public:
    Stream();
    /// Waits for the stream's work, then destroys it.
    ~Stream();
    Stream(const Stream&) = delete;
    Stream& operator=(const Stream&) = delete;
    /// Waits until the work queued so far is done; throws the first error it hit.
    void synchronize();
    /// Work queued on this stream after this call waits until @p event's last mark has
    /// completed (cudaStreamWaitEvent); the host does not wait.
    void wait(const Event& event);
    /// 1, 2, ... in the order streams were created in this process.
    int id() const { return id_; }
    /// The cudart handle.
    cudaStream_t handle() const { return stream_; }

private:
    cudaStream_t stream_ = nullptr;
    int id_ = 0;
};

/// Work queued on the default stream after this call (plain launches and copies) waits
/// until @p event's last mark has completed (cudaStreamWaitEvent on stream 0); the host
/// does not wait.
void default_stream_wait(const Event& event);

/// Queues a copy of @p bytes on @p stream and returns (cudaMemcpyAsync). Asynchronous only
/// when the host side is page-locked (host_alloc); from pageable memory the host waits.
void memcpy_async(void* dst, const void* src, std::size_t bytes, CopyKind kind, Stream& stream);

/// @p bytes of page-locked host memory (cudaHostAlloc); nullptr for 0 bytes.
void* host_alloc(std::size_t bytes);
/// Frees memory from host_alloc (nullptr is fine).
void host_free(void* host_ptr);

/// Queues @p kernel on @p stream (kernel<<<grid, block, shared_bytes, stream>>>) and returns.
template <class... Params, class... Args>
void launch(Stream& stream, void (*kernel)(Params...), dim3 grid, dim3 block,
            std::size_t shared_bytes, Args&&... args) {
    static_assert(sizeof...(Params) == sizeof...(Args), "launch: wrong number of kernel arguments");
    kernel<<<grid, block, shared_bytes, stream.handle()>>>(std::forward<Args>(args)...);
    check(cudaGetLastError(), "kernel launch");
}

}  // namespace gpu
}  // namespace gl::cuda::gpu or gl::cuda::cpu

#else  // the CPU runtime

#include <functional>

namespace gl::cuda {
inline namespace cpu {

/// An ordered queue of work, run by its own worker thread.
class Stream {
public:
    /// Starts the stream's worker.
    Stream();
    /// Waits for the stream's work, then stops its worker (errors of the work are dropped:
    /// call synchronize() first to see them).
    ~Stream();
    Stream(const Stream&) = delete;
    Stream& operator=(const Stream&) = delete;
    /// Waits until the work queued so far is done; throws the first error it hit (and
    /// forgets it).
    void synchronize();
    /// Work queued on this stream after this call waits until @p event's last mark (at the
    /// time of this call) has completed; the host does not wait. An event never recorded
    /// is complete.
    void wait(const Event& event);
    /// 1, 2, ... in the order streams were created in this process (0 is the default stream).
    int id() const;

    /// The worker and its queue (streams_cpu.cpp).
    struct Impl;
    /// Queues @p work; it runs after everything queued before it on this stream.
    void enqueue(std::function<void()> work);

private:
    std::unique_ptr<Impl> impl_;
};

/// Work issued on the default stream after this call waits until @p event's last mark has
/// completed (cudaStreamWaitEvent on stream 0). The CPU runtime's default stream is the
/// host thread that issues it (its launches and copies run before they return), so that
/// thread waits here; on a GPU the host returns at once and the device waits. Either way
/// the wait orders the default stream's work, which the timeline's clocks record.
void default_stream_wait(const Event& event);

/// Queues a copy of @p bytes on @p stream and returns (cudaMemcpyAsync). The pointers are
/// checked now, as in memcpy. From pageable host memory (not from host_alloc) the copy is
/// staged through a page-locked buffer after the stream's earlier work, and the host waits
/// for it, as CUDA does.
void memcpy_async(void* dst, const void* src, std::size_t bytes, CopyKind kind, Stream& stream);

/// @p bytes of page-locked host memory (mlock), page-aligned; nullptr for 0 bytes. Throws
/// gl::cuda::Error (memory_allocation) with the process's lock limit (ulimit -l) when the
/// kernel refuses to lock that much.
void* host_alloc(std::size_t bytes);
/// Unlocks and frees memory from host_alloc (nullptr is fine); anything else throws.
void host_free(void* host_ptr);
/// Whether [p, p + bytes) lies inside one buffer from host_alloc.
bool is_page_locked(const void* p, std::size_t bytes);

/// Queues @p kernel on @p stream and returns; the grid runs when the stream reaches it. A
/// bad configuration throws now; an error inside the kernel at the next synchronize.
template <class... Params, class... Args>
void launch(Stream& stream, void (*kernel)(Params...), dim3 grid, dim3 block,
            std::size_t shared_bytes, Args&&... args) {
    detail::KernelLaunch k;
    k.grid = grid;
    k.block = block;
    k.dynamic_shared_bytes = shared_bytes;
    // The arguments are copied now (a GPU copies them into the launch), so the caller's
    // variables may change before the grid runs.
    auto call = detail::bind_kernel(k, kernel, std::forward<Args>(args)...);
    detail::check_launch_config(k);
    stream.enqueue([k, call] { detail::launch_kernel(k); });
}

}  // namespace cpu
}  // namespace gl::cuda::gpu or gl::cuda::cpu

#endif

// In the runtime's own inline namespace, like everything that calls it: the g++ and the
// nvcc instantiations must not share a symbol.
#if defined(__CUDACC__)
namespace gl::cuda::inline gpu {
#else
namespace gl::cuda::inline cpu {
#endif

/// Page-locked host memory for @p count elements of T that frees itself.
template <class T>
class PinnedBuffer {
public:
    /// Allocates (host_alloc) @p count elements, uninitialised.
    explicit PinnedBuffer(std::size_t count)
        : data_(static_cast<T*>(host_alloc(count * sizeof(T)))), size_(count) {}
    ~PinnedBuffer() { host_free(data_); }
    PinnedBuffer(const PinnedBuffer&) = delete;
    PinnedBuffer& operator=(const PinnedBuffer&) = delete;
    /// The first element.
    T* data() const { return data_; }
    /// The number of elements.
    std::size_t size() const { return size_; }

private:
    T* data_;
    std::size_t size_;
};

/// Device memory for @p count elements of T that frees itself.
template <class T>
class DeviceBuffer {
public:
    /// Allocates (gl::cuda::malloc) @p count elements, uninitialised.
    explicit DeviceBuffer(std::size_t count) : data_(malloc_n<T>(count)), size_(count) {}
    ~DeviceBuffer() { gl::cuda::free(data_); }
    DeviceBuffer(const DeviceBuffer&) = delete;
    DeviceBuffer& operator=(const DeviceBuffer&) = delete;
    /// The first element.
    T* data() const { return data_; }
    /// The number of elements.
    std::size_t size() const { return size_; }

private:
    T* data_;
    std::size_t size_;
};

}  // namespace gl::cuda::gpu or gl::cuda::cpu
