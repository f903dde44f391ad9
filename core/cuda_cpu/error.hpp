/// @file
/// @brief Errors of both CUDA runtimes (cudart on a GPU, ours on the CPU): a code and a message.
///
/// Plain C++ (no CUDA types), so host code compiled by nvcc and by g++ sees the same class.
/// Every gl::cuda function reports failure by throwing gl::cuda::Error; the code says what
/// kind of failure it was, in the spirit of cudaError_t, and the message says what to do.
#pragma once

#include <string>

#include "base/error.hpp"

namespace gl::cuda {

/// What went wrong (compare cudaError_t).
enum class ErrorCode {
    invalid_value,           ///< a bad argument: a size, a copy kind, a null pointer
    memory_allocation,       ///< out of memory
    invalid_device_pointer,  ///< a pointer that gl::cuda::malloc did not return
    invalid_configuration,   ///< a grid, block or shared-memory size the hardware does not allow
    kernel_exception,        ///< a kernel thread threw a C++ exception (CPU runtime)
    barrier_divergence,      ///< threads wait at a barrier or warp operation that cannot complete
    launch_failure,          ///< the kernel failed on the device (a bad address, a trap)
    no_device,               ///< no usable GPU (none present, or no driver)
    unknown,                 ///< any other cudart error
};

/// The code's name, e.g. "barrier_divergence".
inline const char* error_name(ErrorCode code) {
    switch (code) {
        case ErrorCode::invalid_value: return "invalid_value";
        case ErrorCode::memory_allocation: return "memory_allocation";
        case ErrorCode::invalid_device_pointer: return "invalid_device_pointer";
        case ErrorCode::invalid_configuration: return "invalid_configuration";
        case ErrorCode::kernel_exception: return "kernel_exception";
        case ErrorCode::barrier_divergence: return "barrier_divergence";
        case ErrorCode::launch_failure: return "launch_failure";
        case ErrorCode::no_device: return "no_device";
        case ErrorCode::unknown: return "unknown";
    }
    return "unknown";
}

/// One sentence on what the code means (compare cudaGetErrorString).
inline const char* error_string(ErrorCode code) {
    switch (code) {
        case ErrorCode::invalid_value: return "an argument is out of range";
        case ErrorCode::memory_allocation: return "out of memory";
        case ErrorCode::invalid_device_pointer:
            return "the pointer was not returned by gl::cuda::malloc (or was already freed)";
        case ErrorCode::invalid_configuration:
            return "the launch configuration exceeds what the hardware allows";
        case ErrorCode::kernel_exception: return "a kernel thread threw an exception";
        case ErrorCode::barrier_divergence:
            return "threads wait at a barrier or warp operation that not every thread reaches";
        case ErrorCode::launch_failure: return "the kernel failed while running on the device";
        case ErrorCode::no_device: return "no usable CUDA device";
        case ErrorCode::unknown: return "unknown CUDA error";
    }
    return "unknown CUDA error";
}

/// The exception every gl::cuda function throws.
class Error : public gl::Error {
public:
    /// @param code the kind of failure
    /// @param detail what happened, in full sentences, and what to do about it
    Error(ErrorCode code, const std::string& detail)
        : gl::Error(std::string("gl::cuda ") + error_name(code) + ": " + detail), code_(code) {}
    /// The kind of failure.
    ErrorCode code() const noexcept { return code_; }

private:
    ErrorCode code_;
};

}  // namespace gl::cuda
