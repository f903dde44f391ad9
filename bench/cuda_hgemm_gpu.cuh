// The tensor-core GEMM on a GPU (claims FP-5, FP-6): the WMMA kernel (FP16 inputs, FP32
// accumulation) against cublasGemmEx with the same types (CUBLAS_COMPUTE_32F), and
// cublasSgemm (FP32) as the baseline the lecture's "about 2x" refers to.
//
//   build/bench/cuda_hgemm_gpu_bench [--sizes=1024,2048,4096,8192] [--markdown_out=table.md]
//                                    [--json_out=run.json] [--no_check]
//
// First the WMMA kernel is checked against cublasGemmEx on one size (exit code 1 if it
// differs beyond FP32 rounding). Then each kernel is timed in batches of launches between
// one pair of CUDA events (gpu_bench.hpp), the median time per launch kept; GFLOP/s =
// 2n^3 / time. Every cuBLAS and CUDA call is checked, as in cuda_gemm_gpu.cuh: a failure
// ends the program with its name and exit code 1. Without a GPU it says so and exits 0.
//
// Written once, compiled twice: by nvcc (cuda_hgemm_gpu.cu) and by g++ for the CUDA-on-CPU
// runtime (cuda_hgemm_dryrun.cpp), where the WMMA kernel runs on the runtime's WMMA
// (cuda_cpu/wmma.hpp) and host loops stand in for cuBLAS (the dry run of
// tools/gpu/run_gpu_checks.sh; the tables say so).
#if defined(__CUDACC__)
#include <cublas_v2.h>
#endif

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include "cuda_cpu/cuda_compat.hpp"
#include "cuda_cpu/cuda_fp16_compat.hpp"
#include "gpu_bench.hpp"
#include "kernels/cuda/lowp.hpp"

namespace {

using gl::bench::gpu::Timing;

__global__ void fill(std::size_t n, unsigned seed, float* f, __half* h) {
    const std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i >= n) return;
    h[i] = __float2half_rn(gl::bench::gpu::hashed_uniform(i, seed));
    f[i] = __half2float(h[i]);  // the same values in both precisions
}

/// A, B in FP32 and FP16 (the same values), C in FP32; all device memory, freed at the end.
struct Problem {
    int n;
    float *A32, *B32, *C;
    __half *A16, *B16;
    explicit Problem(int size) : n(size) {
        const std::size_t e = std::size_t(n) * n;
        A32 = gl::cuda::malloc_n<float>(e), B32 = gl::cuda::malloc_n<float>(e), C = gl::cuda::malloc_n<float>(e);
        A16 = gl::cuda::malloc_n<__half>(e), B16 = gl::cuda::malloc_n<__half>(e);
        const dim3 grid(unsigned((e + 255) / 256)), block(256);
        gl::cuda::launch(fill, grid, block, 0, e, 1u, A32, A16);
        gl::cuda::launch(fill, grid, block, 0, e, 2u, B32, B16);
        gl::cuda::synchronize();
    }
    ~Problem() {
        for (void* p : {static_cast<void*>(A32), static_cast<void*>(B32), static_cast<void*>(C),
                        static_cast<void*>(A16), static_cast<void*>(B16)}) {
            try {
                gl::cuda::free(p);
            } catch (...) {  // a destructor must not throw; a broken device shows up at the next call
            }
        }
    }
    Problem(const Problem&) = delete;
    Problem& operator=(const Problem&) = delete;
    std::vector<float> c() const {
        std::vector<float> h(std::size_t(n) * n);
        gl::cuda::memcpy(h.data(), C, h.size() * sizeof(float), gl::cuda::CopyKind::device_to_host);
        return h;
    }
};

enum class Kernel { sgemm, gemm_ex, wmma };
constexpr Kernel kKernels[] = {Kernel::sgemm, Kernel::gemm_ex, Kernel::wmma};

#if defined(__CUDACC__)
using gl::bench::gpu::check_cublas;
using gl::bench::gpu::cublas;

std::string name(Kernel k) {
    return k == Kernel::sgemm ? "cublasSgemm" : k == Kernel::gemm_ex ? "cublasGemmEx" : "wmma";
}

// Row-major C = A B is column-major C^T = B^T A^T: pass B first.
void run(Kernel kernel, const Problem& p) {
    const float one = 1.0f, zero = 0.0f;
    const int n = p.n;
    switch (kernel) {
        case Kernel::wmma: gl::kernels::cuda_hgemm_wmma_device(n, n, n, p.A16, p.B16, p.C); break;
        case Kernel::gemm_ex:
            check_cublas(cublasGemmEx(cublas(), CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, p.B16, CUDA_R_16F, n, p.A16,
                                      CUDA_R_16F, n, &zero, p.C, CUDA_R_32F, n, CUBLAS_COMPUTE_32F,
                                      CUBLAS_GEMM_DEFAULT),
                         "cublasGemmEx");
            break;
        case Kernel::sgemm:
            check_cublas(cublasSgemm(cublas(), CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, p.B32, n, p.A32, n, &zero, p.C, n),
                         "cublasSgemm");
            break;
    }
}
#else
// The CPU runtime has no cuBLAS: host loops with the same input and accumulation types
// stand in for it (dry run only; the tables say so). The WMMA kernel itself runs.
std::string name(Kernel k) {
    return k == Kernel::sgemm ? "host FP32 loop (stands in for cublasSgemm)"
           : k == Kernel::gemm_ex ? "host FP16-input loop (stands in for cublasGemmEx)"
                                  : "wmma (CPU runtime)";
}

template <class T>
void host_gemm(int n, const T* A, const T* B, float* C) {
    for (int i = 0; i < n; ++i)
        for (int j = 0; j < n; ++j) {
            float acc = 0;
            for (int k = 0; k < n; ++k)
                acc += static_cast<float>(A[std::size_t(i) * n + k]) * static_cast<float>(B[std::size_t(k) * n + j]);
            C[std::size_t(i) * n + j] = acc;
        }
}

void run(Kernel kernel, const Problem& p) {
    if (kernel == Kernel::sgemm) host_gemm(p.n, p.A32, p.B32, p.C);
    else if (kernel == Kernel::gemm_ex) host_gemm(p.n, p.A16, p.B16, p.C);
    else gl::kernels::cuda_hgemm_wmma(p.n, p.n, p.n, reinterpret_cast<const std::uint16_t*>(p.A16),
                                      reinterpret_cast<const std::uint16_t*>(p.B16), p.C);
}
#endif

/// WMMA against cublasGemmEx: the same FP16 inputs, both accumulating in FP32.
bool check_wmma() {
    const int n = gl::bench::gpu::kOnGpu ? 512 : 64;  // the CPU runtime's WMMA does 32x the work
    const Problem p(n);
    run(Kernel::gemm_ex, p);
    gl::cuda::synchronize();
    const auto want = p.c();
    gl::cuda::memset(p.C, 0xff, want.size() * sizeof(float));  // NaN where nothing is written
    run(Kernel::wmma, p);
    gl::cuda::synchronize();
    const auto got = p.c();
    double worst = 0;
    for (std::size_t i = 0; i < got.size(); ++i) {
        const double d = std::fabs(double(got[i]) - want[i]);
        worst = std::isnan(d) ? INFINITY : std::max(worst, d);
    }
    std::printf("check: %s vs %s at n=%d, max |difference| %.3g\n", name(Kernel::wmma).c_str(),
                name(Kernel::gemm_ex).c_str(), n, worst);
    return worst < 1e-2;
}

std::string markdown_table(const std::vector<Timing>& t, const std::vector<int>& sizes,
                           const gl::cuda::DeviceStatus& gpu) {
    const std::vector<std::string> labels = {name(Kernel::sgemm) + " (FP32)",
                                             name(Kernel::gemm_ex) + " (FP16 in, FP32 compute)",
                                             name(Kernel::wmma) + " (ours, FP16 in, FP32 acc.)"};
    return gl::bench::gpu::table_head(
               "Tensor-core GEMM (WMMA) vs cuBLAS", "host loops stand in for cuBLAS", "cuda_hgemm_gpu_bench", gpu,
               "GFLOP/s (2n^3 / median time per launch, launches batched between CUDA events), and in brackets the "
               "ratio to " + name(Kernel::sgemm) + " (FP32) in the same run.") +
           gl::bench::gpu::rate_rows(t, sizes, labels);
}

/// Checks WMMA against cublasGemmEx (unless --no_check), then times each kernel at each size.
bool measure(const gl::bench::gpu::Options& opt, std::vector<Timing>& timings) {
    gl::bench::gpu::check_sizes(opt.sizes, 16, "the WMMA tile");
    if (opt.check && !check_wmma()) {
        std::printf("FAILED: the WMMA GEMM disagrees with cublasGemmEx: not timing\n");
        return false;
    }
    gl::bench::gpu::time_every<Problem>(opt.sizes, kKernels, name, run, timings);
    return true;
}

}  // namespace

int main(int argc, char** argv) {
    return gl::bench::gpu::run_program("cuda_hgemm_gpu_bench", argc, argv, measure, markdown_table);
}
