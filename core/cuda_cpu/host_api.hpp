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

/// A point in the device's stream of work; two of them time the work between.
class Event {
public:
    Event();
    ~Event();
    Event(const Event&) = delete;
    Event& operator=(const Event&) = delete;
    /// Marks "now" in the stream of work.
    void record();
    /// Waits until the work before the mark is done.
    void synchronize();
    /// Milliseconds between two recorded events (after both completed).
    static float elapsed_ms(const Event& start, const Event& stop);

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

#include <chrono>

namespace gl::cuda {
inline namespace cpu {

/// @p bytes of "device" memory, 256-byte aligned like cudaMalloc's; nullptr for 0 bytes.
void* malloc(std::size_t bytes);
/// Frees memory from malloc (nullptr is fine); anything else throws.
void free(void* device_ptr);
/// Copies @p bytes, checking that each pointer on the device side of @p kind lies inside
/// memory from malloc (with room for @p bytes).
void memcpy(void* dst, const void* src, std::size_t bytes, CopyKind kind);
/// Sets @p bytes of device memory to the byte @p value.
void memset(void* device_ptr, int value, std::size_t bytes);
/// Nothing to wait for: launches on the CPU runtime return when the grid is done.
void synchronize();
/// "CPU runtime (N worker threads)".
std::string device_name();

/// A point in time; on the CPU runtime work is synchronous, so recording reads the clock.
class Event {
public:
    Event() = default;
    Event(const Event&) = delete;
    Event& operator=(const Event&) = delete;
    /// Reads the clock: every launch before it has already finished.
    void record();
    /// Nothing to wait for: the work before record() is done when record() runs.
    void synchronize() {}
    /// Milliseconds between two recorded events; throws if either was never recorded.
    static float elapsed_ms(const Event& start, const Event& stop);

private:
    std::chrono::steady_clock::time_point time_{};
    bool recorded_ = false;
};


/// Typed allocation: @p count elements of T.
template <class T>
T* malloc_n(std::size_t count) {
    return static_cast<T*>(malloc(count * sizeof(T)));
}

}  // namespace cpu
}  // namespace gl::cuda

#endif
