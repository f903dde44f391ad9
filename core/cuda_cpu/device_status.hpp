/// @file
/// @brief Is there a GPU? The question tests and benchmarks ask before they use one.
///
/// Plain C++; defined in host_api_gpu.cu, so only in builds with nvcc
/// (GRADLAB_HAVE_CUDA=1). Code that needs a GPU asks, and skips with the message when
/// there is none: it never fails for lack of one and never pretends to have run.
#pragma once

#include <string>

namespace gl::cuda {

/// What device_status() found.
struct DeviceStatus {
    bool available = false;  ///< a GPU this build can run kernels on
    std::string name;        ///< e.g. "NVIDIA H200"
    int compute_capability = 0;  ///< e.g. 90
    std::string message;     ///< the driver's reason when there is none
};

/// Asks the CUDA driver (once; the answer is cached) whether a usable GPU is present.
DeviceStatus device_status();

}  // namespace gl::cuda
