// The GPU side of MEM-3: the device memory bandwidth, measured as a device-to-device copy
// and as STREAM's triad kernel, timed with CUDA events (bytes counted as STREAM counts them). Defined in
// device_bandwidth.cu, so only in builds with nvcc (GRADLAB_HAVE_CUDA=1).
#pragma once

#include <cstddef>

namespace gl::claims {

// GB/s of the median of @p repeats copies of @p bytes within device memory, after one
// warm-up copy. Throws gl::cuda::Error without a GPU (ask cuda::device_status() first).
double device_copy_gbs(std::size_t bytes, int repeats);

// GB/s of STREAM's triad (a[i] = b[i] + s * c[i], 3 x 4 bytes per element counted) over
// @p bytes per array, as a kernel on the device: the median of @p repeats after a warm-up.
double device_triad_gbs(std::size_t bytes, int repeats);

}  // namespace gl::claims
