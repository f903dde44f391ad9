/// @file
/// @brief Which CUDA devices this machine has, or why there are none.
#pragma once

#include <string>
#include <vector>

namespace gl::sys {

/// One CUDA device's headline properties.
struct CudaDevice {
    int index = 0;                   ///< device ordinal
    std::string name;                ///< e.g. "NVIDIA H200"
    int major = 0;                   ///< compute capability, major
    int minor = 0;                   ///< compute capability, minor
    long long memory_bytes = 0;      ///< global memory
    int multiprocessors = 0;         ///< SM count
    bool smoke_kernel_ran = false;   ///< a tiny kernel ran and wrote the expected value
};

/// The CUDA situation of this build on this machine.
struct CudaReport {
    bool built_with_cuda = false;     ///< nvcc compiled the CUDA sources into this build
    int runtime_version = 0;          ///< CUDA runtime version (e.g. 13000), when built with CUDA
    int driver_version = 0;           ///< driver's CUDA version, 0 without a driver
    std::vector<CudaDevice> devices;  ///< devices found (empty without a GPU)
    std::string reason;               ///< why there are no devices (driver message), if none
};

/// Queries the CUDA runtime (or explains that the build has no CUDA).
CudaReport cuda_report();

}  // namespace gl::sys
