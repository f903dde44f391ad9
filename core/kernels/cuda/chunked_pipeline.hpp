/// @file
/// @brief Overlapping copies with compute on streams: a chunked copy-then-compute pipeline
/// (events and stream waits), its synchronous baseline, and batches staged through pinned
/// buffers. On the CPU runtime (streams.hpp), where the timeline shows the overlap.
///
/// The job: out = chunk_compute(in) for an array that lives in host memory. Done
/// synchronously, the device sits idle while the input is copied in and while the result is
/// copied out, and the copy engine sits idle while the kernel runs. Cut into chunks, chunk
/// i+1 can be copied in while chunk i is computed and chunk i-1 copied out: the total tends
/// to the longest stage instead of the sum of all three.
#pragma once

#include <cstddef>

#include "cuda_cpu/streams.hpp"

namespace gl::kernels {

/// How the pipeline cuts and schedules the work.
struct PipelineConfig {
    std::size_t chunk = 16384;  ///< elements per chunk (the last one may be shorter)
    int streams = 3;  ///< 1: everything on one stream; 2: copies in on one, kernels and copies
                      ///< out on the other; 3: copies in, kernels, copies out on one each
    int buffers = 2;  ///< device buffer pairs (in, out) that chunks rotate through
    int work = 64;    ///< chunk_compute's iterations per element
};

/// The baseline: copy all of @p in to the device, run chunk_compute over it, copy it back
/// to @p out, on the default stream (nothing overlaps). @p n elements.
void process_synchronous(const float* in, float* out, std::size_t n, const PipelineConfig& config);

/// The same result, chunk by chunk on config.streams streams: chunk i goes to device buffer
/// pair i % config.buffers; events order each chunk's copy in, kernel and copy out, and keep
/// a buffer from being overwritten while an earlier chunk still uses it. @p in and @p out
/// should be page-locked (gl::cuda::host_alloc), or the copies cannot overlap anything.
/// Returns when @p out holds every chunk's result.
void process_pipelined(const float* in, float* out, std::size_t n, const PipelineConfig& config);

/// Copies @p batches batches of @p batch_elems floats from pageable host memory @p host
/// (batch b at host + b * batch_elems) to device memory @p device (same layout) on @p stream,
/// through two page-locked staging buffers of one batch each: the host fills one while the
/// stream copies the other. Every device copy is from pinned memory, so it is asynchronous.
/// Returns when every batch is on the device.
void upload_batches_pinned(const float* host, std::size_t batches, std::size_t batch_elems,
                           float* device, gl::cuda::Stream& stream);

}  // namespace gl::kernels
