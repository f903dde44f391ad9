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
#include <stdexcept>
#include <string>
#include <vector>

#include "cuda_cpu/cuda_compat.hpp"
#include "cuda_cpu/device_status.hpp"
#include "cuda_cpu/host_api.hpp"
#include "testkit/timing.hpp"

#if defined(__CUDACC__)
#include <cublas_v2.h>
#endif

namespace gl::bench::gpu {

/// True when this program runs on a GPU; false on the CUDA-on-CPU runtime (dry run).
#if defined(__CUDACC__)
inline constexpr bool kOnGpu = true;
#else
inline constexpr bool kOnGpu = false;
#endif

/// A value in [-1, 1) from a hash of index @p i: test data made on the device, the same
/// on both runtimes.
__host__ __device__ inline float hashed_uniform(std::size_t i, unsigned seed) {
    unsigned h = static_cast<unsigned>(i) * 2654435761u ^ seed;
    h ^= h >> 16;
    h *= 0x85ebca6bu;
    h ^= h >> 13;
    return static_cast<float>(h) * (2.0f / 4294967296.0f) - 1.0f;
}

/// The device the kernels run on: the GPU the driver reports, or the CPU runtime itself.
inline gl::cuda::DeviceStatus device() {
#if defined(__CUDACC__)
    return gl::cuda::device_status();
#else
    return {true, gl::cuda::device_name() + ", dry run", 0, ""};
#endif
}

#if defined(__CUDACC__)
/// Throws with the call's name unless cuBLAS reports success: every cuBLAS call is checked.
inline void check_cublas(cublasStatus_t status, const char* what) {
    if (status != CUBLAS_STATUS_SUCCESS)
        throw gl::Error(std::string(what) + " failed: cuBLAS status " + std::to_string(int(status)));
}

/// The program's cuBLAS handle, made at the first use.
inline cublasHandle_t cublas() {
    static cublasHandle_t handle = [] {
        cublasHandle_t h = nullptr;
        check_cublas(cublasCreate(&h), "cublasCreate");
        return h;
    }();
    return handle;
}
#endif

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
/// 0.3 s, or 10 batches, or 2 s; the median per-launch time is kept. A launch that alone
/// outlasts the 2 s leaves no batch: then the timed launch is the measurement (1 x 1).
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
    // A launch slower than the whole time allowance (the naive kernel at n = 8192 on an
    // H200) leaves no batch (per_batch is then 1): its one timed launch is the measurement.
    if (per_launch.empty()) per_launch.push_back(one);
    Timing t;
    t.kernel = kernel;
    t.n = n;
    t.launches_per_batch = per_batch;
    t.batches = static_cast<int>(per_launch.size());
    t.ms = gl::testkit::median(per_launch);
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

/// Prints one timing as a line of the program's log.
inline void print_timing(const Timing& t) {
    std::printf("%-56s %10.3f ms %10.1f GFLOP/s  (%d x %d launches)\n", t.name().c_str(), t.ms, t.gflops, t.batches,
                t.launches_per_batch);
    std::fflush(stdout);
}

/// Writes @p text to @p path; throws if it cannot.
inline void write_text(const std::string& path, const std::string& text) {
    std::ofstream out(path);
    out << text;
    if (!out) throw std::runtime_error("could not write " + path);
    std::printf("wrote %s\n", path.c_str());
}

/// The head of a benchmark's Markdown table: the title, the dry-run warning (on the CPU
/// runtime only), the device, date and program, and @p what the numbers are.
inline std::string table_head(const std::string& title, const std::string& dry_run_note, const std::string& program,
                              const gl::cuda::DeviceStatus& gpu, const std::string& what) {
    std::string md = "# " + title + "\n\n";
    if (!kOnGpu) md += "**Dry run on the CUDA-on-CPU runtime: no number here is a GPU's; " + dry_run_note + ".**\n\n";
    return md + "Device: " + gpu.name + " (sm_" + std::to_string(gpu.compute_capability) + "), measured " + utc_now() +
           " by `bench/" + program + "` (tools/gpu/run_gpu_checks.sh).\n" + what + "\n\n";
}

/// The table itself: a row per kernel (@p labels), a column per size, each cell the rate
/// and, in brackets, its ratio to the first kernel's at that size. @p t holds the timings
/// size by size, the kernels in the order of @p labels within each size.
inline std::string rate_rows(const std::vector<Timing>& t, const std::vector<int>& sizes,
                             const std::vector<std::string>& labels) {
    std::string md = "| kernel |";
    for (int n : sizes) md += " n=" + std::to_string(n) + " |";
    md += "\n|---|";
    for (std::size_t i = 0; i < sizes.size(); ++i) md += "---:|";
    md += "\n";
    const std::size_t kinds = labels.size();
    for (std::size_t k = 0; k < kinds; ++k) {
        md += "| " + labels[k] + " |";
        for (std::size_t i = 0; i < sizes.size(); ++i) {
            const Timing& mine = t[i * kinds + k];
            const Timing& base = t[i * kinds];
            char cell[64];
            std::snprintf(cell, sizeof cell, " %.1f (%.2fx) |", mine.gflops, mine.gflops / base.gflops);
            md += cell;
        }
        md += "\n";
    }
    return md;
}

/// Throws unless every size is a positive multiple of @p tile (the kernels' tile).
inline void check_sizes(const std::vector<int>& sizes, int tile, const char* tile_name) {
    for (int n : sizes)
        if (n <= 0 || n % tile != 0)
            throw std::invalid_argument("--sizes: " + std::to_string(n) + " is not a positive multiple of " +
                                        std::to_string(tile) + " (" + tile_name + ")");
}

/// Times every kernel at every size, size by size (the order rate_rows reads): one
/// @p Problem per size, @p run(kernel, problem) one launch, @p name(kernel) its label.
template <class Problem, class Kernel, std::size_t K, class Name, class Run>
void time_every(const std::vector<int>& sizes, const Kernel (&kernels)[K], Name name, Run run,
                std::vector<Timing>& timings) {
    for (int n : sizes) {
        const Problem p(n);
        for (Kernel k : kernels) {
            timings.push_back(time_launches(name(k), n, [&] { run(k, p); }));
            print_timing(timings.back());
        }
    }
}

/// Checks, then times: false (after saying why) when a kernel gave wrong results.
using Measure = std::function<bool(const Options&, std::vector<Timing>&)>;
/// The Markdown table of the timings.
using Table = std::function<std::string(const std::vector<Timing>&, const std::vector<int>& sizes,
                                        const gl::cuda::DeviceStatus&)>;

/// The whole program around @p measure: reads the command line (exit code 2 if bad), asks
/// for the device (none: says so, exit code 0, nothing measured), measures (exit code 1
/// if a check failed), prints the table and writes it and the JSON where asked. Any error
/// (a failed CUDA or cuBLAS call throws) ends it with its message and exit code 1.
inline int run_program(const char* program, int argc, char** argv, const Measure& measure, const Table& table) {
    try {
        Options opt;
        if (!parse_options(argc, argv, opt)) return 2;
        const gl::cuda::DeviceStatus gpu = device();
        if (!gpu.available) {
            std::printf("needs a CUDA device: %s; nothing measured\n", gpu.message.c_str());
            return 0;
        }
        std::printf("device: %s (sm_%d)\n", gpu.name.c_str(), gpu.compute_capability);
        std::vector<Timing> timings;
        if (!measure(opt, timings)) return 1;
        gl::cuda::synchronize();
        const std::string md = table(timings, opt.sizes, gpu);
        std::printf("%s", md.c_str());
        if (!opt.markdown.empty()) write_text(opt.markdown, md);
        if (!opt.json.empty()) write_json(opt.json, timings, gpu);
        return 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "%s: %s\n", program, e.what());
        return 1;
    }
}

}  // namespace gl::bench::gpu
