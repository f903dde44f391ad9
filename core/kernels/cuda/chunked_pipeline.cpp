// The chunked copy-then-compute pipeline and pinned staging on the CPU runtime (see
// chunked_pipeline.hpp). Lab 15 writes process_pipelined and upload_batches_pinned.
#include "kernels/cuda/chunked_pipeline.hpp"

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "base/error.hpp"
#include "kernels/cuda/chunk_compute.cuh"

namespace gl::kernels {
namespace {

using gl::cuda::CopyKind;
using gl::cuda::DeviceBuffer;
using gl::cuda::Event;
using gl::cuda::PinnedBuffer;
using gl::cuda::Stream;

constexpr int kThreadsPerBlock = 256;

void check_config(const PipelineConfig& c) {
    if (c.chunk == 0 || c.chunk > (1u << 30))
        throw Error("pipeline: chunk must be between 1 and 2^30 elements, got " + std::to_string(c.chunk));
    if (c.streams < 1 || c.streams > 3)
        throw Error("pipeline: streams must be 1, 2 or 3, got " + std::to_string(c.streams));
    if (c.buffers < 1 || c.buffers > 16)
        throw Error("pipeline: buffers must be between 1 and 16, got " + std::to_string(c.buffers));
    if (c.work < 0) throw Error("pipeline: work must be >= 0");
}

/// Queues chunk_compute over @p count elements on @p stream.
void launch_compute(Stream& stream, std::size_t count, int work, const float* in, float* out) {
    const auto n = static_cast<int>(count);
    const dim3 grid((n + kThreadsPerBlock - 1) / kThreadsPerBlock);
    gl::cuda::launch(stream, cuda::chunk_compute, grid, dim3(kThreadsPerBlock), 0, n, work, in, out);
}

}  // namespace

void process_synchronous(const float* in, float* out, std::size_t n, const PipelineConfig& config) {
    check_config(config);
    if (n == 0) return;
    if (n > (1u << 30)) throw Error("process_synchronous: at most 2^30 elements");
    DeviceBuffer<float> d_in(n), d_out(n);
    gl::cuda::memcpy(d_in.data(), in, n * sizeof(float), CopyKind::host_to_device);
    const auto count = static_cast<int>(n);
    const dim3 grid((count + kThreadsPerBlock - 1) / kThreadsPerBlock);
    gl::cuda::launch(cuda::chunk_compute, grid, dim3(kThreadsPerBlock), 0, count, config.work,
                     static_cast<const float*>(d_in.data()), d_out.data());
    gl::cuda::memcpy(out, d_out.data(), n * sizeof(float), CopyKind::device_to_host);
}

void process_pipelined(const float* in, float* out, std::size_t n, const PipelineConfig& config) {
    check_config(config);
    if (n == 0) return;
    const std::size_t chunks = (n + config.chunk - 1) / config.chunk;
    const auto slots = static_cast<std::size_t>(config.buffers);
    // Device buffers: slot s holds chunks s, s + slots, s + 2 slots, ...
    std::vector<std::unique_ptr<DeviceBuffer<float>>> d_in, d_out;
    for (std::size_t s = 0; s < slots; ++s) {
        d_in.push_back(std::make_unique<DeviceBuffer<float>>(config.chunk));
        d_out.push_back(std::make_unique<DeviceBuffer<float>>(config.chunk));
    }
    // The three roles share streams when there are fewer than three.
    std::vector<std::unique_ptr<Stream>> streams;
    for (int i = 0; i < config.streams; ++i) streams.push_back(std::make_unique<Stream>());
    Stream& copy_in = *streams[0];
    Stream& compute = *streams[std::min(1, config.streams - 1)];
    Stream& copy_out = *streams[std::min(2, config.streams - 1)];
    // One event per slot and stage: recorded after each stage of the slot's latest chunk.
    std::vector<Event> copied_in(slots), computed(slots), copied_out(slots);

    // LAB 15 BEGIN: the chunked pipeline: queue each chunk's copy in, kernel and copy out, ordered with events
    // For chunk c (elements [c * chunk, c * chunk + count)), slot s = c % slots:
    //  1. copy_in must not overwrite d_in[s] while the kernel of chunk c - slots still reads
    //     it: copy_in.wait(computed[s]); then queue the copy in and record copied_in[s].
    //  2. compute waits for that copy (copied_in[s]) and for d_out[s] to have been copied
    //     out for chunk c - slots (copied_out[s]); launch_compute; record computed[s].
    //  3. copy_out waits for computed[s]; queue the copy out; record copied_out[s].
    // Stream::wait waits for the event's latest record at the time of the call. (The host
    // waits for every stream after this region.)
    for (std::size_t c = 0; c < chunks; ++c) {
        const std::size_t first = c * config.chunk;
        const std::size_t count = std::min(config.chunk, n - first);
        const std::size_t bytes = count * sizeof(float);
        const std::size_t s = c % slots;

        copy_in.wait(computed[s]);
        gl::cuda::memcpy_async(d_in[s]->data(), in + first, bytes, CopyKind::host_to_device, copy_in);
        copied_in[s].record(copy_in);

        compute.wait(copied_in[s]);
        compute.wait(copied_out[s]);
        launch_compute(compute, count, config.work, d_in[s]->data(), d_out[s]->data());
        computed[s].record(compute);

        copy_out.wait(computed[s]);
        gl::cuda::memcpy_async(out + first, d_out[s]->data(), bytes, CopyKind::device_to_host, copy_out);
        copied_out[s].record(copy_out);
    }
    // LAB 15 END
    for (auto& stream : streams) stream->synchronize();  // done, errors reported, buffers free to go
}

void upload_batches_pinned(const float* host, std::size_t batches, std::size_t batch_elems,
                           float* device, Stream& stream) {
    if (batches == 0 || batch_elems == 0) return;
    const std::size_t bytes = batch_elems * sizeof(float);
    PinnedBuffer<float> staging_a(batch_elems), staging_b(batch_elems);
    float* staging[2] = {staging_a.data(), staging_b.data()};
    Event slot_free[2];  // recorded after the copy out of each staging buffer
    // LAB 15 BEGIN: stage each batch through the two pinned buffers, alternating
    // For batch b, buffer k = b % 2: the host may refill staging[k] only after the stream
    // has finished copying the batch it held before (slot_free[k]); then std::memcpy the
    // batch into it, queue its copy to device + b * batch_elems, and record slot_free[k].
    // Wait for the stream at the end: the staging buffers are freed on return.
    for (std::size_t b = 0; b < batches; ++b) {
        const int k = static_cast<int>(b % 2);
        slot_free[k].synchronize();
        std::memcpy(staging[k], host + b * batch_elems, bytes);
        gl::cuda::memcpy_async(device + b * batch_elems, staging[k], bytes, CopyKind::host_to_device, stream);
        slot_free[k].record(stream);
    }
    stream.synchronize();
    // LAB 15 END
}

}  // namespace gl::kernels
