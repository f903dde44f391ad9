/// @file
/// @brief The host side of a CUDA runtime, one spelling for both: gl::cuda::malloc, free,
/// memcpy, memset, synchronize, and events that time the work between them.
///
/// Compiled by nvcc these forward to cudart; compiled by g++ they are the CPU runtime's
/// (host_api_cpu.cpp), where "device memory" is host memory that the runtime tracks, so
/// that the mistakes that crash a GPU program (copying to a host pointer as if it were a
/// device one, freeing twice) throw here with a message instead. Every failure throws
/// gl::cuda::Error.
#pragma once

#include <cstddef>
#include <string>

#include "cuda_cpu/error.hpp"

namespace gl::cuda {

/// Which way a copy goes (compare cudaMemcpyKind).
enum class CopyKind { host_to_host, host_to_device, device_to_host, device_to_device };

}  // namespace gl::cuda

#if defined(__CUDACC__)
#include <cuda_runtime.h>

namespace gl::cuda {
inline namespace gpu {

void check(cudaError_t status, const char* what);

/// @p bytes of device memory, 256-byte aligned; nullptr for 0 bytes.
void* malloc(std::size_t bytes);
/// Frees memory from malloc (nullptr is fine).
void free(void* device_ptr);
/// Copies @p bytes; @p kind says which side each pointer is on.
void memcpy(void* dst, const void* src, std::size_t bytes, CopyKind kind);
/// Sets @p bytes of device memory to the byte @p value.
void memset(void* device_ptr, int value, std::size_t bytes);
/// Waits for all work on the device; throws the first error a kernel hit.
void synchronize();
/// A human-readable name of the device this runtime runs kernels on.
std::string device_name();

class Stream;

/// A point in the device's stream of work; two of them time the work between.
class Event {
public:
    Event();
    ~Event();
    Event(const Event&) = delete;
    Event& operator=(const Event&) = delete;
    /// Marks "now" in the default stream of work.
    void record();
    /// Marks the point @p stream has reached (cudaEventRecord on that stream).
    void record(Stream& stream);
    /// Waits until the work before the mark is done.
    void synchronize();
    /// Whether the work before the last mark is done (cudaEventQuery), without waiting.
    bool query() const;
    /// Milliseconds between two recorded events (after both completed).
    static float elapsed_ms(const Event& start, const Event& stop);
    /// The cudart handle (for cudaStreamWaitEvent).
    cudaEvent_t handle() const { return event_; }

private:
    cudaEvent_t event_ = nullptr;
};


/// Typed allocation: @p count elements of T.
template <class T>
T* malloc_n(std::size_t count) {
    return static_cast<T*>(malloc(count * sizeof(T)));
}

}  // namespace gpu
}  // namespace gl::cuda

#else  // the CPU runtime

#include <memory>

namespace gl::cuda {
inline namespace cpu {

class Stream;

/// @p bytes of "device" memory, 256-byte aligned like cudaMalloc's; nullptr for 0 bytes.
void* malloc(std::size_t bytes);
/// Frees memory from malloc (nullptr is fine); anything else throws.
void free(void* device_ptr);
/// Copies @p bytes, checking that each pointer on the device side of @p kind lies inside
/// memory from malloc (with room for @p bytes).
void memcpy(void* dst, const void* src, std::size_t bytes, CopyKind kind);
/// Sets @p bytes of device memory to the byte @p value.
void memset(void* device_ptr, int value, std::size_t bytes);
/// Waits until every stream (streams.hpp) has finished its work; launches and copies on the
/// default stream return when they are done. Throws the first error a stream's work hit.
void synchronize();
/// "CPU runtime (N worker threads)".
std::string device_name();

/// A point in a stream of work; two of them time the work between. On the default stream
/// work is synchronous, so record() reads the clock; on a Stream the clock is read by the
/// stream's worker when it reaches the mark.
class Event {
public:
    Event();
    ~Event();
    Event(const Event&) = delete;
    Event& operator=(const Event&) = delete;
    /// Reads the clock: every launch and copy of the default stream has already finished.
    void record();
    /// Marks the point @p stream has reached: the event completes when the stream's work
    /// queued before it is done (cudaEventRecord on that stream).
    void record(Stream& stream);
    /// Waits until the last mark completed (at once if it was never recorded).
    void synchronize();
    /// Whether the last mark completed, without waiting (cudaEventQuery).
    bool query() const;
    /// Milliseconds between two completed events; throws if either was never recorded.
    static float elapsed_ms(const Event& start, const Event& stop);

    /// The shared state a stream's worker completes (streams_cpu.cpp).
    struct State;
    /// The state, for Stream::wait.
    const std::shared_ptr<State>& state() const { return state_; }

private:
    std::shared_ptr<State> state_;
};

/// Typed allocation: @p count elements of T.
template <class T>
T* malloc_n(std::size_t count) {
    return static_cast<T*>(malloc(count * sizeof(T)));
}

namespace detail {
/// Throws unless the device side(s) of a copy of @p bytes lie inside memory from malloc.
void check_copy(void* dst, const void* src, std::size_t bytes, CopyKind kind);
/// Copies on the calling thread (staged when the host side is pageable) and records it on
/// the timeline; the pointers were checked by check_copy.
void copy_now(void* dst, const void* src, std::size_t bytes, CopyKind kind);
}  // namespace detail

}  // namespace cpu
}  // namespace gl::cuda

#endif
