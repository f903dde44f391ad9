// The CUDA SGEMM family on a GPU: checked, then timed against cuBLAS (claims GPU-1, GPU-2).
//
//   build/bench/cuda_gemm_gpu_bench [--sizes=1024,2048,4096,8192] [--markdown_out=table.md]
//                                   [--json_out=run.json] [--no_check]
//
// First every version is checked against the testkit oracle (a double-precision triple loop) on odd shapes
// (exit code 1 if one is wrong). Then, for each size n, each version and cublasSgemm run
// C = A*B (n x n, float, row-major); one launch is timed with CUDA events, repeated for at
// least 0.3 s (at most 20 times), and the median is kept. GFLOP/s = 2n^3 / time; % of cuBLAS
// compares numbers measured in the same run. Without a GPU it says so and exits 0.
//
// This is a plain program rather than a Google Benchmark binary on purpose: it must also
// build on a GPU machine that has only nvcc and cuBLAS (tools/gpu/run_gpu_checks.sh builds
// it with one nvcc command when the full build cannot be configured there). Its JSON keeps
// Google Benchmark's layout ("context", "benchmarks" with name, real_time, time_unit and
// counters), so the tools that read benchmark output read it too.
#include <cublas_v2.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "cuda_cpu/cuda_compat.hpp"
#include "cuda_cpu/device_status.hpp"
#include "kernels/cuda/sgemm.hpp"
#include "testkit/gemm_oracle.hpp"
#include "testkit/timing.hpp"

namespace {

// Uniform values in [-1, 1) from a hash of the index: quick to make on the device.
__global__ void fill_uniform(std::size_t n, unsigned seed, float* x) {
    const std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i >= n) return;
    unsigned h = static_cast<unsigned>(i) * 2654435761u ^ seed;
    h ^= h >> 16;
    h *= 0x85ebca6bu;
    h ^= h >> 13;
    x[i] = static_cast<float>(h) * (2.0f / 4294967296.0f) - 1.0f;
}

/// Device memory that frees itself.
struct DeviceArray {
    explicit DeviceArray(std::size_t n) : ptr(gl::cuda::malloc_n<float>(n)), count(n) {}
    ~DeviceArray() { cudaFree(ptr); }
    DeviceArray(const DeviceArray&) = delete;
    DeviceArray& operator=(const DeviceArray&) = delete;
    void fill(unsigned seed) {
        gl::cuda::launch(fill_uniform, dim3(static_cast<unsigned>((count + 255) / 256)), dim3(256), 0,
                         count, seed, ptr);
    }
    std::vector<float> to_host() const {
        std::vector<float> h(count);
        gl::cuda::memcpy(h.data(), ptr, count * sizeof(float), gl::cuda::CopyKind::device_to_host);
        return h;
    }
    float* ptr;
    std::size_t count;
};

cublasHandle_t cublas() {
    static cublasHandle_t handle = [] {
        cublasHandle_t h = nullptr;
        if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) throw gl::Error("cublasCreate failed");
        return h;
    }();
    return handle;
}

/// Row-major C = A * B (A: M x K, B: K x N) with cuBLAS, which is column-major: it computes
/// C^T = B^T * A^T when handed B and A in swapped order; no copies.
void cublas_sgemm(int M, int N, int K, const float* A, const float* B, float* C) {
    const float alpha = 1.0f, beta = 0.0f;
    if (cublasSgemm(cublas(), CUBLAS_OP_N, CUBLAS_OP_N, N, M, K, &alpha, B, N, A, K, &beta, C, N) !=
        CUBLAS_STATUS_SUCCESS)
        throw gl::Error("cublasSgemm failed");
}

/// Version 0 is cuBLAS.
void run(int version, int M, int N, int K, const float* A, const float* B, float* C) {
    if (version == 0)
        cublas_sgemm(M, N, K, A, B, C);
    else
        gl::kernels::cuda_gemm_device(version, M, N, K, A, B, C);
}

std::string kernel_name(int version) {
    return version == 0 ? "cublasSgemm" : gl::kernels::cuda_sgemm_versions()[std::size_t(version - 1)].name;
}

constexpr int kKernels = 7;  // cuBLAS and versions 1-6

/// Every kernel against a triple loop in double on shapes that are not multiples of any tile.
bool check_all() {
    const gl::testkit::GemmShape shapes[] = {{1, 1, 1}, {17, 33, 9}, {64, 64, 64}, {100, 75, 130}, {129, 7, 40}, {513, 257, 1000}};
    bool all_ok = true;
    for (const gl::testkit::GemmShape& s : shapes) {
        DeviceArray A(std::size_t(s.M) * s.K), B(std::size_t(s.K) * s.N), C(std::size_t(s.M) * s.N);
        A.fill(1);
        B.fill(2);
        const gl::testkit::ReferenceGemm reference = gl::testkit::reference_gemm(s, A.to_host(), B.to_host());
        for (int v = 0; v < kKernels; ++v) {
            gl::cuda::memset(C.ptr, 0xff, C.count * sizeof(float));  // NaN where nothing is written
            run(v, s.M, s.N, s.K, A.ptr, B.ptr, C.ptr);
            gl::cuda::synchronize();
            const std::string wrong = gl::testkit::mismatches(s, C.to_host(), reference);
            std::printf("check %-24s %4dx%4dx%4d: %s\n", kernel_name(v).c_str(), s.M, s.N, s.K,
                        wrong.empty() ? "ok" : ("FAILED\n" + wrong).c_str());
            all_ok = all_ok && wrong.empty();
        }
    }
    return all_ok;
}

struct Timing {
    std::string name;  // "kernel/n"
    int version, n, repetitions;
    double ms, gflops;
};

Timing time_kernel(int version, int n, const DeviceArray& A, const DeviceArray& B, DeviceArray& C) {
    run(version, n, n, n, A.ptr, B.ptr, C.ptr);  // warm-up: first-launch costs, clocks
    gl::cuda::synchronize();
    gl::cuda::Event start, stop;
    std::vector<double> ms;
    double total = 0;
    while (ms.size() < 20 && (total < 300.0 || ms.size() < 1)) {
        start.record();
        run(version, n, n, n, A.ptr, B.ptr, C.ptr);
        stop.record();
        stop.synchronize();
        ms.push_back(gl::cuda::Event::elapsed_ms(start, stop));
        total += ms.back();
    }
    const double median = gl::testkit::median(ms);
    return {kernel_name(version) + "/" + std::to_string(n), version, n, static_cast<int>(ms.size()),
            median, 2.0 * n * n * n / (median * 1e-3) / 1e9};
}

std::string utc_now() {
    char date[32];
    const std::time_t now = std::time(nullptr);
    std::strftime(date, sizeof date, "%Y-%m-%d %H:%M UTC", std::gmtime(&now));
    return date;
}

void write_markdown(const std::string& path, const std::vector<Timing>& t, const std::vector<int>& sizes,
                    const gl::cuda::DeviceStatus& gpu) {
    std::map<std::string, double> gflops;
    for (const Timing& x : t) gflops[x.name] = x.gflops;
    std::ostringstream md;
    md << "# CUDA SGEMM family vs cuBLAS\n\n"
       << "GPU: " << gpu.name << " (sm_" << gpu.compute_capability << "), measured " << utc_now()
       << " by `bench/cuda_gemm_gpu_bench` (tools/gpu/run_gpu_checks.sh).\n"
       << "Square row-major C = A*B in float. Each cell: GFLOP/s (2n^3 / median time of one launch, "
       << "CUDA events) and, in brackets, % of cublasSgemm measured in the same run.\n\n| kernel |";
    for (int n : sizes) md << " n=" << n << " |";
    md << "\n|---|";
    for (std::size_t i = 0; i < sizes.size(); ++i) md << "---:|";
    md << "\n";
    for (int v = 0; v < kKernels; ++v) {
        md << "| " << kernel_name(v) << " |";
        for (int n : sizes) {
            const double mine = gflops[kernel_name(v) + "/" + std::to_string(n)];
            const double ref = gflops[kernel_name(0) + "/" + std::to_string(n)];
            char cell[64];
            std::snprintf(cell, sizeof cell, "%.0f (%.1f%%)", mine, ref > 0 ? 100.0 * mine / ref : 0.0);
            md << " " << cell << " |";
        }
        md << "\n";
    }
    std::ofstream(path) << md.str();
    std::printf("wrote %s\n", path.c_str());
}

void write_json(const std::string& path, const std::vector<Timing>& t, const gl::cuda::DeviceStatus& gpu) {
    std::ofstream out(path);
    out << "{\n  \"context\": {\"date\": \"" << utc_now() << "\", \"gpu\": \"" << gpu.name
        << "\", \"compute_capability\": " << gpu.compute_capability << "},\n  \"benchmarks\": [\n";
    for (std::size_t i = 0; i < t.size(); ++i)
        out << "    {\"name\": \"" << t[i].name << "\", \"run_name\": \"" << t[i].name
            << "\", \"iterations\": " << t[i].repetitions << ", \"real_time\": " << t[i].ms
            << ", \"time_unit\": \"ms\", \"GFLOP/s\": " << t[i].gflops * 1e9 << "}"
            << (i + 1 < t.size() ? ",\n" : "\n");
    out << "  ]\n}\n";
    std::printf("wrote %s\n", path.c_str());
}

}  // namespace

int main(int argc, char** argv) {
    std::vector<int> sizes = {1024, 2048, 4096, 8192};
    std::string markdown, json;
    bool check = true;
    for (int i = 1; i < argc; ++i) {
        if (std::strncmp(argv[i], "--markdown_out=", 15) == 0) {
            markdown = argv[i] + 15;
        } else if (std::strncmp(argv[i], "--json_out=", 11) == 0) {
            json = argv[i] + 11;
        } else if (std::strcmp(argv[i], "--no_check") == 0) {
            check = false;
        } else if (std::strncmp(argv[i], "--sizes=", 8) == 0) {
            sizes.clear();
            std::stringstream list(argv[i] + 8);
            for (std::string n; std::getline(list, n, ',');) sizes.push_back(std::stoi(n));
        } else {
            std::fprintf(stderr, "unknown argument %s\nusage: %s [--sizes=1024,2048] [--markdown_out=F] "
                                 "[--json_out=F] [--no_check]\n", argv[i], argv[0]);
            return 2;
        }
    }
    const gl::cuda::DeviceStatus gpu = gl::cuda::device_status();
    if (!gpu.available) {
        std::printf("needs a CUDA device: %s; nothing measured\n", gpu.message.c_str());
        return 0;
    }
    std::printf("GPU: %s (sm_%d)\n", gpu.name.c_str(), gpu.compute_capability);
    if (check && !check_all()) {
        std::printf("a kernel gave wrong results: not timing\n");
        return 1;
    }
    std::vector<Timing> timings;
    for (int n : sizes) {
        DeviceArray A(std::size_t(n) * n), B(std::size_t(n) * n), C(std::size_t(n) * n);
        A.fill(1);
        B.fill(2);
        for (int v = 0; v < kKernels; ++v) {
            timings.push_back(time_kernel(v, n, A, B, C));
            const Timing& t = timings.back();
            std::printf("%-28s %10.3f ms %10.1f GFLOP/s  (%d runs)\n", t.name.c_str(), t.ms, t.gflops,
                        t.repetitions);
            std::fflush(stdout);
        }
    }
    if (!markdown.empty()) write_markdown(markdown, timings, sizes, gpu);
    if (!json.empty()) write_json(json, timings, gpu);
    return 0;
}
