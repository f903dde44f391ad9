// The CUDA SGEMM family on a GPU: checked, then timed against cuBLAS (claims GPU-1, GPU-2).
//
//   build/bench/cuda_gemm_gpu_bench [--sizes=1024,2048,4096,8192] [--markdown_out=table.md]
//                                   [--json_out=run.json] [--no_check]
//
// First every version is checked against a double-precision triple loop on odd shapes
// (exit code 1 if one is wrong). Then, for each size n, each version and cublasSgemm run
// C = A*B (n x n, float, row-major), timed in batches of launches between one pair of CUDA
// events (gpu_bench.hpp); the median time per launch is kept. GFLOP/s = 2n^3 / time; % of
// cuBLAS compares numbers measured in the same run. Every cuBLAS and CUDA call is checked:
// a failure ends the program with its name and exit code 1. Without a GPU it says so and
// exits 0 (tools/gpu/run_gpu_checks.sh treats that as "did not run").
//
// The program is written once and compiled twice: by nvcc (cuda_gemm_gpu.cu, the GPU and
// cuBLAS) and by g++ for the CUDA-on-CPU runtime (cuda_gemm_dryrun.cpp), where a plain host
// loop stands in for cuBLAS and every table says so. The second is what the dry run of
// run_gpu_checks.sh runs in CI, so the checks, timing and files here have run before a GPU
// sees them. Its JSON keeps Google Benchmark's layout; "GFLOP/s" is in GFLOP/s.
#if defined(__CUDACC__)
#include <cublas_v2.h>
#endif

#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "gpu_bench.hpp"
#include "cuda_cpu/cuda_compat.hpp"
#include "kernels/cuda/sgemm.hpp"

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
    ~DeviceArray() {
        try {
            gl::cuda::free(ptr);
        } catch (...) {  // a destructor must not throw; a broken device shows up at the next call
        }
    }
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

#if defined(__CUDACC__)
/// Throws with the call's name unless cuBLAS reports success.
void check_cublas(cublasStatus_t status, const char* what) {
    if (status != CUBLAS_STATUS_SUCCESS)
        throw gl::Error(std::string(what) + " failed: cuBLAS status " + std::to_string(int(status)));
}

cublasHandle_t cublas() {
    static cublasHandle_t handle = [] {
        cublasHandle_t h = nullptr;
        check_cublas(cublasCreate(&h), "cublasCreate");
        return h;
    }();
    return handle;
}

/// Row-major C = A * B (A: M x K, B: K x N) with cuBLAS, which is column-major: it computes
/// C^T = B^T * A^T when handed B and A in swapped order; no copies.
void peer_sgemm(int M, int N, int K, const float* A, const float* B, float* C) {
    const float alpha = 1.0f, beta = 0.0f;
    check_cublas(cublasSgemm(cublas(), CUBLAS_OP_N, CUBLAS_OP_N, N, M, K, &alpha, B, N, A, K, &beta, C, N),
                 "cublasSgemm");
}
const char* const kPeerName = "cublasSgemm";
#else
/// The CPU runtime has no cuBLAS: a plain host loop stands in for it (dry run only; its
/// numbers are no GPU's and the tables say so). "Device" memory is host memory there.
void peer_sgemm(int M, int N, int K, const float* A, const float* B, float* C) {
    for (int i = 0; i < M; ++i)
        for (int j = 0; j < N; ++j) {
            float acc = 0;
            for (int k = 0; k < K; ++k) acc += A[std::size_t(i) * K + k] * B[std::size_t(k) * N + j];
            C[std::size_t(i) * N + j] = acc;
        }
}
const char* const kPeerName = "host loop (stands in for cublasSgemm)";
#endif

/// Version @p version of the family, queued on the device (on the CPU runtime: run).
void family_sgemm(int version, int M, int N, int K, const float* A, const float* B, float* C) {
#if defined(__CUDACC__)
    gl::kernels::cuda_gemm_device(version, M, N, K, A, B, C);
#else
    gl::kernels::cuda_gemm(version, M, N, K, A, B, C);
#endif
}

/// Version 0 is cuBLAS.
void run(int version, int M, int N, int K, const float* A, const float* B, float* C) {
    if (version == 0)
        peer_sgemm(M, N, K, A, B, C);
    else
        family_sgemm(version, M, N, K, A, B, C);
}

std::string kernel_name(int version) {
    return version == 0 ? kPeerName : gl::kernels::cuda_sgemm_versions()[std::size_t(version - 1)].name;
}

constexpr int kKernels = 7;  // cuBLAS and versions 1-6

/// Every kernel against a triple loop in double on shapes that are not multiples of any tile.
bool check_all() {
    struct Shape { int M, N, K; };
    const Shape shapes[] = {{1, 1, 1}, {17, 33, 9}, {64, 64, 64}, {100, 75, 130}, {129, 7, 40}, {513, 257, 1000}};
    bool all_ok = true;
    for (const Shape& s : shapes) {
        DeviceArray A(std::size_t(s.M) * s.K), B(std::size_t(s.K) * s.N), C(std::size_t(s.M) * s.N);
        A.fill(1);
        B.fill(2);
        const auto a = A.to_host(), b = B.to_host();
        for (int v = 0; v < kKernels; ++v) {
            gl::cuda::memset(C.ptr, 0xff, C.count * sizeof(float));  // NaN where nothing is written
            run(v, s.M, s.N, s.K, A.ptr, B.ptr, C.ptr);
            gl::cuda::synchronize();
            const auto c = C.to_host();
            int bad = 0;
            for (int i = 0; i < s.M; ++i)
                for (int j = 0; j < s.N; ++j) {
                    double acc = 0, bound = 0;
                    for (int k = 0; k < s.K; ++k) {
                        const double p = double(a[std::size_t(i) * s.K + k]) * b[std::size_t(k) * s.N + j];
                        acc += p;
                        bound += std::fabs(p);
                    }
                    const double got = c[std::size_t(i) * s.N + j];
                    if (!(std::fabs(got - acc) <= 2.0 * (s.K + 1) * 1.2e-7 * bound + 1e-30)) ++bad;
                }
            std::printf("check %-24s %4dx%4dx%4d: %s\n", kernel_name(v).c_str(), s.M, s.N, s.K,
                        bad ? ("FAILED, " + std::to_string(bad) + " wrong elements").c_str() : "ok");
            all_ok = all_ok && bad == 0;
        }
    }
    return all_ok;
}

using gl::bench::gpu::Timing;

Timing time_kernel(int version, int n, const DeviceArray& A, const DeviceArray& B, DeviceArray& C) {
    return gl::bench::gpu::time_launches(kernel_name(version), n,
                                         [&] { run(version, n, n, n, A.ptr, B.ptr, C.ptr); });
}

std::string markdown_table(const std::vector<Timing>& t, const std::vector<int>& sizes,
                           const gl::cuda::DeviceStatus& gpu) {
    std::map<std::string, double> gflops;
    for (const Timing& x : t) gflops[x.name()] = x.gflops;
    std::ostringstream md;
    md << "# CUDA SGEMM family vs cuBLAS\n\n";
    if (!gl::bench::gpu::kOnGpu)
        md << "**Dry run on the CUDA-on-CPU runtime: no number here is a GPU's, and a host loop stands in "
              "for cuBLAS.**\n\n";
    md << "Device: " << gpu.name << " (sm_" << gpu.compute_capability << "), measured " << gl::bench::gpu::utc_now()
       << " by `bench/cuda_gemm_gpu_bench` (tools/gpu/run_gpu_checks.sh).\n"
       << "Square row-major C = A*B in float. Each cell: GFLOP/s (2n^3 / median time per launch, launches "
       << "batched between CUDA events) and, in brackets, % of " << kPeerName << " measured in the same run.\n\n"
       << "| kernel |";
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
            std::snprintf(cell, sizeof cell, "%.1f (%.1f%%)", mine, ref > 0 ? 100.0 * mine / ref : 0.0);
            md << " " << cell << " |";
        }
        md << "\n";
    }
    return md.str();
}

int bench_main(int argc, char** argv) {
    gl::bench::gpu::Options opt;
    if (!gl::bench::gpu::parse_options(argc, argv, opt)) return 2;
    const gl::cuda::DeviceStatus gpu = gl::bench::gpu::device();
    if (!gpu.available) {
        std::printf("needs a CUDA device: %s; nothing measured\n", gpu.message.c_str());
        return 0;
    }
    std::printf("device: %s (sm_%d)\n", gpu.name.c_str(), gpu.compute_capability);
    if (opt.check && !check_all()) {
        std::printf("a kernel gave wrong results: not timing\n");
        return 1;
    }
    std::vector<Timing> timings;
    for (int n : opt.sizes) {
        DeviceArray A(std::size_t(n) * n), B(std::size_t(n) * n), C(std::size_t(n) * n);
        A.fill(1);
        B.fill(2);
        for (int v = 0; v < kKernels; ++v) {
            timings.push_back(time_kernel(v, n, A, B, C));
            const Timing& t = timings.back();
            std::printf("%-44s %10.3f ms %10.1f GFLOP/s  (%d x %d launches)\n", t.name().c_str(), t.ms, t.gflops,
                        t.batches, t.launches_per_batch);
            std::fflush(stdout);
        }
    }
    gl::cuda::synchronize();
    if (!opt.markdown.empty()) gl::bench::gpu::write_text(opt.markdown, markdown_table(timings, opt.sizes, gpu));
    if (!opt.json.empty()) gl::bench::gpu::write_json(opt.json, timings, gpu);
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    try {
        return bench_main(argc, argv);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "cuda_gemm_gpu_bench: %s\n", e.what());
        return 1;
    }
}
