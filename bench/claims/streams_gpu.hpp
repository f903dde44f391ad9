// The GPU halves of ASYNC-1 and DATA-3. Defined in streams_gpu.cu, so only in builds with
// nvcc (GRADLAB_HAVE_CUDA=1); each throws gl::cuda::Error without a GPU (ask
// cuda::device_status() first).
#pragma once

#include <cstddef>

namespace gl::claims {

/// GB/s of the median of @p repeats host-to-device copies of @p bytes, from page-locked
/// (cudaHostAlloc) or pageable (new[]) host memory, timed with CUDA events.
double gpu_h2d_gbs(std::size_t bytes, bool pinned, int repeats);

/// The chunked copy-in, kernel, copy-out pipeline of @p chunks chunks of @p chunk floats on
/// the GPU: the time on one stream divided by the time with each chunk on its own of three
/// streams (round robin, a buffer pair per stream), best of @p repeats each.
double gpu_pipeline_speedup(std::size_t chunk, int chunks, int work, int repeats);

}  // namespace gl::claims
