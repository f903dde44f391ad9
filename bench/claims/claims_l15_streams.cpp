// Lab 15's claims on the CPU runtime, with the GPU halves where there is a GPU: ASYNC-1
// (streams overlap copies with compute: the chunked pipeline on 1, 2 and 3 streams, read
// from the runtime's timeline) and DATA-3 (pinned host memory: faster copies, and copies
// that do not make the host wait).
#include <chrono>
#include <cstring>
#include <memory>
#include <vector>

#include "claims.hpp"
#include "cuda_cpu/cpu_runtime.hpp"
#include "cuda_cpu/streams.hpp"
#include "cuda_cpu/timeline.hpp"
#include "kernels/cuda/chunked_pipeline.hpp"
#include "verdicts_l15_streams.hpp"
#if GRADLAB_HAVE_CUDA
#include "cuda_cpu/device_status.hpp"
#include "streams_gpu.hpp"
#endif

namespace gl::claims {
namespace {

namespace rt = gl::cuda::cpu;

/// Runs block workers on one OS thread for its lifetime: the kernels get one core and the
/// streams' copies the other, as a GPU's copy engines work beside its multiprocessors.
struct OneBlockWorker {
    OneBlockWorker() : saved(rt::workers()) { rt::set_workers(1); }
    ~OneBlockWorker() { rt::set_workers(saved); }
    int saved;
};

/// Models a host-device link of @p gbs for its lifetime (timeline.hpp): copies then take
/// about as long relative to kernels as PCIe copies do on a GPU.
struct ModeledLink {
    explicit ModeledLink(double gbs) : saved(rt::link_bandwidth()) { rt::set_link_bandwidth(gbs); }
    ~ModeledLink() { rt::set_link_bandwidth(saved); }
    double saved;
};

/// Whether this build has a GPU to time, and its name or why not.
bool have_gpu(std::string& name) {
#if GRADLAB_HAVE_CUDA
    const cuda::DeviceStatus gpu = cuda::device_status();
    name = gpu.available ? gpu.name : "no GPU here: " + gpu.message;
    return gpu.available;
#else
    name = "this build has no CUDA";
    return false;
#endif
}

// ---- ASYNC-1 -------------------------------------------------------------------------------

struct PipelineRun {
    double wall_us, overlap_fraction, copy_us, kernel_us;
};

PipelineRun run_pipeline_once(const float* in, float* out, std::size_t n, const kernels::PipelineConfig& config) {
    std::vector<rt::TimelineEntry> t;
    {
        rt::ScopedTimeline recording;
        kernels::process_pipelined(in, out, n, config);
        t = rt::timeline();
    }
    PipelineRun r{};
    double first = 1e300, last = 0;
    for (const auto& e : t) {
        first = std::min(first, e.start_us);
        last = std::max(last, e.end_us);
    }
    r.wall_us = last - first;
    r.copy_us = rt::busy_us(t, rt::is_copy);
    r.kernel_us = rt::busy_us(t, rt::is_kernel);
    r.overlap_fraction = r.copy_us > 0 ? rt::overlap_us(t, rt::is_copy, rt::is_kernel) / r.copy_us : 0.0;
    return r;
}

Result async1(const Context& ctx) {
    const std::size_t chunk = 128 * 1024;  // 512 KiB a chunk
    const int chunks = 6, repeats = ctx.quick ? 5 : 11;
    const std::size_t n = chunk * chunks;  // 3 MiB in and 3 MiB out: under an 8 MiB lock limit
    gl::cuda::PinnedBuffer<float> in(n), out(n);
    for (std::size_t i = 0; i < n; ++i) in.data()[i] = static_cast<float>(i % 1000) * 1e-3f;
    OneBlockWorker one_core_for_kernels;
    constexpr double kLinkGbs = 1.0;  // a chunk's copy ~0.5 ms, about a third of its kernel here
    ModeledLink link(kLinkGbs);

    Async1Measured m;
    Result r;
    std::ostringstream text;
    text << chunks << " chunks of " << chunk * sizeof(float) / 1024
         << " KiB, kernels on 1 block worker, copies over a modeled " << fixed(kLinkGbs, 1) << " GB/s link; ";
    for (const int streams : {1, 2, 3}) {
        const kernels::PipelineConfig config{chunk, streams, 2, 0};
        std::vector<double> wall, overlap, copy, kernel;
        for (int rep = 0; rep < repeats; ++rep) {
            const PipelineRun run = run_pipeline_once(in.data(), out.data(), n, config);
            wall.push_back(run.wall_us);
            overlap.push_back(run.overlap_fraction);
            copy.push_back(run.copy_us);
            kernel.push_back(run.kernel_us);
        }
        m.runs.push_back({streams, median(wall), median(overlap)});
        if (streams == 1) m.no_overlap_sum_us = median(copy) + median(kernel);
        text << streams << " stream" << (streams > 1 ? "s " : " ") << fixed(median(wall) / 1e3, 2) << " ms (copies "
             << fixed(median(copy) / 1e3, 2) << " ms, kernels " << fixed(median(kernel) / 1e3, 2) << " ms busy, "
             << fixed(100 * median(overlap), 0) << "% of copy time overlapped); ";
        r.data["cpu_runtime"].push_back({{"streams", streams}, {"wall_us", median(wall)},
                                         {"copy_busy_us", median(copy)}, {"kernel_busy_us", median(kernel)},
                                         {"overlap_fraction", median(overlap)}});
    }
    text << "no-overlap sum " << fixed(m.no_overlap_sum_us / 1e3, 2) << " ms";
    r.data["no_overlap_sum_us"] = m.no_overlap_sum_us;
    if (have_gpu(m.gpu_name)) {
#if GRADLAB_HAVE_CUDA
        m.gpu_speedup = gpu_pipeline_speedup(std::size_t{4} << 20, 16, 64, ctx.quick ? 3 : 10);
        text << "; " << m.gpu_name << ": 3 streams " << fixed(*m.gpu_speedup, 2) << "x faster than 1";
        r.data["gpu_speedup"] = *m.gpu_speedup;
#endif
    }
    r.data["gpu"] = m.gpu_name;
    r.measured = text.str();
    const Judgement j = judge_async1(m);
    r.verdict = j.verdict;
    r.why = j.why;
    return r;
}

// ---- DATA-3 --------------------------------------------------------------------------------

double copy_gbs(float* device, const float* host, std::size_t n, int repeats) {
    std::vector<double> seconds;
    for (int rep = 0; rep < repeats; ++rep) {
        const auto t0 = std::chrono::steady_clock::now();
        gl::cuda::memcpy(device, host, n * sizeof(float), gl::cuda::CopyKind::host_to_device);
        seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    return static_cast<double>(n * sizeof(float)) / median(seconds) * 1e-9;
}

// The host's time in memcpy_async over the copy's own time (from the timeline), median.
double call_fraction(float* device, const float* host, std::size_t n, int repeats) {
    std::vector<double> fractions;
    gl::cuda::Stream stream;
    for (int rep = 0; rep < repeats; ++rep) {
        stream.synchronize();
        std::vector<rt::TimelineEntry> t;
        double call_us;
        {
            rt::ScopedTimeline recording;
            const auto t0 = std::chrono::steady_clock::now();
            gl::cuda::memcpy_async(device, host, n * sizeof(float), gl::cuda::CopyKind::host_to_device, stream);
            call_us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
            stream.synchronize();
            t = rt::timeline();
        }
        if (t.size() != 1) throw Error("DATA-3: expected one copy on the timeline");
        // From the call to the end of the copy: how much of that the host spent in the call.
        fractions.push_back(call_us / std::max(t[0].end_us, 1e-3));
    }
    return median(fractions);
}

Result data3(const Context& ctx) {
    const std::size_t n = std::size_t{1} << 20;  // 4 MiB
    const int repeats = ctx.quick ? 9 : 31;
    gl::cuda::PinnedBuffer<float> pinned(n);
    std::vector<float> pageable(n);
    for (std::size_t i = 0; i < n; ++i) pinned.data()[i] = pageable[i] = static_cast<float>(i);
    gl::cuda::DeviceBuffer<float> device(n);
    gl::cuda::memcpy(device.data(), pinned.data(), n * sizeof(float), gl::cuda::CopyKind::host_to_device);

    Data3Measured m;
    m.pinned_gbs = copy_gbs(device.data(), pinned.data(), n, repeats);
    m.pageable_gbs = copy_gbs(device.data(), pageable.data(), n, repeats);
    m.pinned_call_fraction = call_fraction(device.data(), pinned.data(), n, repeats);
    m.pageable_call_fraction = call_fraction(device.data(), pageable.data(), n, repeats);
    Result r;
    r.data = {{"cpu_runtime", {{"pinned_gbs", m.pinned_gbs}, {"pageable_gbs", m.pageable_gbs},
                               {"pinned_call_fraction", m.pinned_call_fraction},
                               {"pageable_call_fraction", m.pageable_call_fraction}}}};
    std::string text = "CPU runtime, 4 MiB host-to-device: pinned " + fixed(m.pinned_gbs, 1) + " GB/s, pageable " +
                       fixed(m.pageable_gbs, 1) + " GB/s (staged through a 256 KiB buffer, as a GPU driver does); "
                       "memcpy_async returns after " + fixed(100 * m.pinned_call_fraction, 0) +
                       "% of the copy's time from pinned memory, " + fixed(100 * m.pageable_call_fraction, 0) +
                       "% from pageable";
    if (have_gpu(m.gpu_name)) {
#if GRADLAB_HAVE_CUDA
        const std::size_t bytes = std::size_t{256} << 20;
        m.gpu_pinned_gbs = gpu_h2d_gbs(bytes, true, ctx.quick ? 5 : 20);
        m.gpu_pageable_gbs = gpu_h2d_gbs(bytes, false, ctx.quick ? 5 : 20);
        text += "; " + m.gpu_name + ", 256 MiB: pinned " + fixed(*m.gpu_pinned_gbs, 1) + " GB/s, pageable " +
                fixed(*m.gpu_pageable_gbs, 1) + " GB/s";
        r.data["gpu_pinned_gbs"] = *m.gpu_pinned_gbs;
        r.data["gpu_pageable_gbs"] = *m.gpu_pageable_gbs;
#endif
    }
    r.data["gpu"] = m.gpu_name;
    r.measured = text;
    const Judgement j = judge_data3(m);
    r.verdict = j.verdict;
    r.why = j.why;
    return r;
}

}  // namespace

std::vector<Claim> lab15_streams_claims() {
    return {
        {"DATA-3", "06", "pin_memory (page-locked host buffers) speeds host-to-device copies and allows non_blocking copies",
         data3, true},
        {"ASYNC-1", "15", "CUDA streams overlap copies and compute; non_blocking copies", async1, true},
    };
}

}  // namespace gl::claims
