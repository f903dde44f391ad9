// The GPU halves of ASYNC-1 and DATA-3 (see streams_gpu.hpp).
#include "streams_gpu.hpp"

#include <algorithm>
#include <chrono>
#include <memory>
#include <vector>

#include "cuda_cpu/streams.hpp"
#include "kernels/cuda/chunk_compute.cuh"
#include "testkit/timing.hpp"

namespace gl::claims {

double gpu_h2d_gbs(std::size_t bytes, bool pinned, int repeats) {
    gl::cuda::DeviceBuffer<unsigned char> device(bytes);
    std::unique_ptr<unsigned char[]> pageable;
    std::unique_ptr<gl::cuda::PinnedBuffer<unsigned char>> locked;
    unsigned char* host;
    if (pinned) {
        locked = std::make_unique<gl::cuda::PinnedBuffer<unsigned char>>(bytes);
        host = locked->data();
    } else {
        pageable.reset(new unsigned char[bytes]);
        host = pageable.get();
    }
    std::fill(host, host + bytes, static_cast<unsigned char>(1));
    gl::cuda::memcpy(device.data(), host, bytes, gl::cuda::CopyKind::host_to_device);  // warm-up
    gl::cuda::Event start, stop;
    std::vector<double> seconds;
    for (int r = 0; r < std::max(repeats, 1); ++r) {
        start.record();
        gl::cuda::memcpy(device.data(), host, bytes, gl::cuda::CopyKind::host_to_device);
        stop.record();
        stop.synchronize();
        seconds.push_back(gl::cuda::Event::elapsed_ms(start, stop) * 1e-3);
    }
    return static_cast<double>(bytes) / testkit::median(seconds) * 1e-9;
}

namespace {

// Seconds of the whole pipeline with chunk c on stream c % streams.size().
double pipeline_seconds(std::vector<std::unique_ptr<gl::cuda::Stream>>& streams, const float* in, float* out,
                        std::size_t chunk, int chunks, int work) {
    const std::size_t k = streams.size();
    std::vector<std::unique_ptr<gl::cuda::DeviceBuffer<float>>> d_in, d_out;
    for (std::size_t s = 0; s < k; ++s) {
        d_in.push_back(std::make_unique<gl::cuda::DeviceBuffer<float>>(chunk));
        d_out.push_back(std::make_unique<gl::cuda::DeviceBuffer<float>>(chunk));
    }
    const std::size_t bytes = chunk * sizeof(float);
    const int n = static_cast<int>(chunk);
    gl::cuda::synchronize();
    const auto t0 = std::chrono::steady_clock::now();
    for (int c = 0; c < chunks; ++c) {
        const std::size_t s = static_cast<std::size_t>(c) % k;  // in-order per stream: no events needed
        gl::cuda::Stream& st = *streams[s];
        gl::cuda::memcpy_async(d_in[s]->data(), in + c * chunk, bytes, gl::cuda::CopyKind::host_to_device, st);
        gl::cuda::launch(st, kernels::cuda::chunk_compute, dim3((n + 255) / 256), dim3(256), 0, n, work,
                         static_cast<const float*>(d_in[s]->data()), d_out[s]->data());
        gl::cuda::memcpy_async(out + c * chunk, d_out[s]->data(), bytes, gl::cuda::CopyKind::device_to_host, st);
    }
    for (auto& st : streams) st->synchronize();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

double gpu_pipeline_speedup(std::size_t chunk, int chunks, int work, int repeats) {
    const std::size_t n = chunk * static_cast<std::size_t>(chunks);
    gl::cuda::PinnedBuffer<float> in(n), out(n);
    std::fill(in.data(), in.data() + n, 1.0f);
    double best[2] = {1e30, 1e30};
    for (int r = 0; r < std::max(repeats, 1) + 1; ++r)  // the first round warms up
        for (int variant = 0; variant < 2; ++variant) {
            std::vector<std::unique_ptr<gl::cuda::Stream>> streams;
            for (int s = 0; s < (variant == 0 ? 1 : 3); ++s) streams.push_back(std::make_unique<gl::cuda::Stream>());
            const double t = pipeline_seconds(streams, in.data(), out.data(), chunk, chunks, work);
            if (r > 0) best[variant] = std::min(best[variant], t);
        }
    return best[0] / best[1];
}

}  // namespace gl::claims
