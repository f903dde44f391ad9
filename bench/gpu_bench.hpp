/// @file
/// @brief What the two GPU GEMM benchmarks (cuda_gemm_gpu.cuh, cuda_hgemm_gpu.cuh) share:
/// the device they run on, timing a batch of launches between one pair of events, the
/// command line, and the JSON they write.
///
/// Compiled by nvcc for a GPU, and by g++ for the CUDA-on-CPU runtime: the dry run of
/// tools/gpu/run_gpu_checks.sh runs the same programs there, so that every step of the
/// GPU check has run once before it meets a GPU.
#pragma once

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "cuda_cpu/device_status.hpp"
#include "cuda_cpu/host_api.hpp"

namespace gl::bench::gpu {

/// True when this program runs on a GPU; false on the CUDA-on-CPU runtime (dry run).
#if defined(__CUDACC__)
inline constexpr bool kOnGpu = true;
#else
inline constexpr bool kOnGpu = false;
#endif

/// The device the kernels run on: the GPU the driver reports, or the CPU runtime itself.
inline gl::cuda::DeviceStatus device() {
#if defined(__CUDACC__)
    return gl::cuda::device_status();
#else
    return {true, gl::cuda::device_name() + ", dry run", 0, ""};
#endif
}

/// One kernel at one size: the median time of one launch and the rate it gives.
struct Timing {
    std::string kernel;
    int n = 0;
    int launches_per_batch = 0;
    int batches = 0;
    double ms = 0;      ///< median over batches of (batch time / launches in it)
    double gflops = 0;  ///< 2 n^3 / ms
    std::string name() const { return kernel + "/" + std::to_string(n); }
};

/// Times @p launch (one square n x n x n GEMM, queued, not waited for). After one warm-up
/// launch (first-launch costs, clocks), one timed launch sizes the batches: enough launches
/// between one pair of events that a batch takes about 20 ms, so the events' resolution
/// and the gaps between launches are small beside it. Then batches until at least 3 and
/// 0.3 s, or 10 batches, or 2 s; the median per-launch time is kept.
inline Timing time_launches(const std::string& kernel, int n, const std::function<void()>& launch) {
    launch();
    gl::cuda::synchronize();
    gl::cuda::Event start, stop;
    auto batch_ms = [&](int launches) {
        start.record();
        for (int i = 0; i < launches; ++i) launch();
        stop.record();
        stop.synchronize();
        return double(gl::cuda::Event::elapsed_ms(start, stop));
    };
    const double one = batch_ms(1);
    const int per_batch = std::clamp(static_cast<int>(20.0 / std::max(one, 1e-3)), 1, 200);
    std::vector<double> per_launch;
    double total = one;
    while (per_launch.size() < 10 && total < 2000.0 && (per_launch.size() < 3 || total < 300.0)) {
        const double ms = batch_ms(per_batch);
        per_launch.push_back(ms / per_batch);
        total += ms;
    }
    std::sort(per_launch.begin(), per_launch.end());
    Timing t;
    t.kernel = kernel;
    t.n = n;
    t.launches_per_batch = per_batch;
    t.batches = static_cast<int>(per_launch.size());
    t.ms = per_launch[per_launch.size() / 2];
    t.gflops = 2.0 * double(n) * n * n / (t.ms * 1e-3) / 1e9;
    return t;
}

inline std::string utc_now() {
    char date[32];
    const std::time_t now = std::time(nullptr);
    std::strftime(date, sizeof date, "%Y-%m-%d %H:%M UTC", std::gmtime(&now));
    return date;
}

/// The command line both benchmarks take.
struct Options {
    std::vector<int> sizes = {1024, 2048, 4096, 8192};
    std::string markdown, json;
    bool check = true;
};

/// Parses --sizes=1024,2048 --markdown_out=F --json_out=F --no_check; false (after a
/// usage line on stderr) for anything else.
inline bool parse_options(int argc, char** argv, Options& o) {
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a.rfind("--sizes=", 0) == 0) {
            o.sizes.clear();
            std::stringstream list(a.substr(8));
            for (std::string n; std::getline(list, n, ',');) o.sizes.push_back(std::stoi(n));
        } else if (a.rfind("--markdown_out=", 0) == 0) {
            o.markdown = a.substr(15);
        } else if (a.rfind("--json_out=", 0) == 0) {
            o.json = a.substr(11);
        } else if (a == "--no_check") {
            o.check = false;
        } else {
            std::fprintf(stderr, "unknown argument %s\nusage: %s [--sizes=1024,2048] [--markdown_out=F] "
                                 "[--json_out=F] [--no_check]\n", a.c_str(), argv[0]);
            return false;
        }
    }
    return !o.sizes.empty();
}

/// Google Benchmark's JSON layout ("context", "benchmarks" with name, real_time, time_unit,
/// counters beside them), so the tools that read benchmark output read it too. "GFLOP/s"
/// is in GFLOP/s.
inline void write_json(const std::string& path, const std::vector<Timing>& t, const gl::cuda::DeviceStatus& gpu) {
    std::ofstream out(path);
    out << "{\n  \"context\": {\"date\": \"" << utc_now() << "\", \"gpu\": \"" << gpu.name
        << "\", \"compute_capability\": " << gpu.compute_capability << ", \"on_gpu\": " << (kOnGpu ? "true" : "false")
        << "},\n  \"benchmarks\": [\n";
    for (std::size_t i = 0; i < t.size(); ++i)
        out << "    {\"name\": \"" << t[i].name() << "\", \"run_name\": \"" << t[i].name()
            << "\", \"iterations\": " << t[i].launches_per_batch * t[i].batches << ", \"real_time\": " << t[i].ms
            << ", \"time_unit\": \"ms\", \"launches_per_batch\": " << t[i].launches_per_batch
            << ", \"batches\": " << t[i].batches << ", \"GFLOP/s\": " << t[i].gflops << "}"
            << (i + 1 < t.size() ? ",\n" : "\n");
    out << "  ]\n}\n";
    if (!out) throw std::runtime_error("could not write " + path);
    std::printf("wrote %s\n", path.c_str());
}

/// Writes @p text to @p path; throws if it cannot.
inline void write_text(const std::string& path, const std::string& text) {
    std::ofstream out(path);
    out << text;
    if (!out) throw std::runtime_error("could not write " + path);
    std::printf("wrote %s\n", path.c_str());
}

}  // namespace gl::bench::gpu
