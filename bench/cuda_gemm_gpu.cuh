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
#include "testkit/gemm_oracle.hpp"

namespace {

// Uniform values in [-1, 1), made on the device.
__global__ void fill_uniform(std::size_t n, unsigned seed, float* x) {
    const std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i < n) x[i] = gl::bench::gpu::hashed_uniform(i, seed);
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
using gl::bench::gpu::check_cublas;
using gl::bench::gpu::cublas;

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

/// Every kernel against the testkit oracle (a triple loop in double) on shapes that are not multiples of any tile.
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

/// Checks every kernel (unless --no_check), then times each at each size.
bool measure(const gl::bench::gpu::Options& opt, std::vector<Timing>& timings) {
    if (opt.check && !check_all()) {
        std::printf("a kernel gave wrong results: not timing\n");
        return false;
    }
    for (int n : opt.sizes) {
        DeviceArray A(std::size_t(n) * n), B(std::size_t(n) * n), C(std::size_t(n) * n);
        A.fill(1);
        B.fill(2);
        for (int v = 0; v < kKernels; ++v) {
            timings.push_back(time_kernel(v, n, A, B, C));
            gl::bench::gpu::print_timing(timings.back());
        }
    }
    return true;
}

}  // namespace

int main(int argc, char** argv) {
    return gl::bench::gpu::run_program("cuda_gemm_gpu_bench", argc, argv, measure, markdown_table);
}
