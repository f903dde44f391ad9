// The GPU side of MEM-3: the device memory bandwidth, measured as a device-to-device copy
// timed with CUDA events (read + write counted, as STREAM's copy counts them). Defined in
// device_bandwidth.cu, so only in builds with nvcc (GRADLAB_HAVE_CUDA=1).
#pragma once

#include <cstddef>

namespace gl::claims {

// GB/s of the median of @p repeats copies of @p bytes within device memory, after one
// warm-up copy. Throws gl::cuda::Error without a GPU (ask cuda::device_status() first).
double device_copy_gbs(std::size_t bytes, int repeats);

}  // namespace gl::claims
