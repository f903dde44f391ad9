// The INT8 GEMMs on a GPU (claim Q-1): our dp4a kernel (CUDA cores) and INT8 WMMA kernel
// (tensor cores) against cuBLASLt's INT8 matmul (cublasLtMatmul, int8 inputs, int32
// compute and result), all computing C (int32) = A B^T with A and B (n x n) int8, K
// contiguous in both (the layout cuBLASLt's INT8 tensor-core kernels require: "TN").
//
//   build/bench/cuda_igemm_gpu_bench [--sizes=1024,2048,4096,8192] [--markdown_out=table.md]
//                                    [--json_out=run.json] [--no_check]
//
// First both kernels are checked against cuBLASLt on one size: integer sums, so they must
// agree exactly (exit code 1 otherwise). Then each kernel is timed as in
// cuda_hgemm_gpu.cuh (gpu_bench.hpp); the rate is 2n^3 / time, integer operations
// (reported under the JSON key "GFLOP/s", as GOP/s, so the tools that read the other two
// benchmarks read this one). Without a GPU it says so and exits 0.
//
// Written once, compiled twice: by nvcc (cuda_igemm_gpu.cu) and by g++ for the CUDA-on-CPU
// runtime (cuda_igemm_dryrun.cpp), where our two kernels run on the runtime (its __dp4a and
// WMMA) and a host loop stands in for cuBLASLt (the dry run of tools/gpu/run_gpu_checks.sh;
// the tables say so).
#if defined(__CUDACC__)
#include <cublasLt.h>
#endif

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "cuda_cpu/cuda_compat.hpp"
#include "gpu_bench.hpp"
#include "kernels/cuda/igemm.hpp"

namespace {

using gl::bench::gpu::Timing;

__global__ void fill_int8(std::size_t n, unsigned seed, std::int8_t* x) {
    const std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i < n) x[i] = static_cast<std::int8_t>(lrintf(127.0f * gl::bench::gpu::hashed_uniform(i, seed)));
}

/// A and B (n x n int8) and C (n x n int32), device memory, freed at the end.
struct Problem {
    int n;
    std::int8_t *A, *B;
    std::int32_t* C;
    explicit Problem(int size) : n(size) {
        const std::size_t e = std::size_t(n) * n;
        A = gl::cuda::malloc_n<std::int8_t>(e), B = gl::cuda::malloc_n<std::int8_t>(e);
        C = gl::cuda::malloc_n<std::int32_t>(e);
        const dim3 grid(unsigned((e + 255) / 256)), block(256);
        gl::cuda::launch(fill_int8, grid, block, 0, e, 1u, A);
        gl::cuda::launch(fill_int8, grid, block, 0, e, 2u, B);
        gl::cuda::synchronize();
    }
    ~Problem() {
        for (void* p : {static_cast<void*>(A), static_cast<void*>(B), static_cast<void*>(C)}) {
            try {
                gl::cuda::free(p);
            } catch (...) {  // a destructor must not throw; a broken device shows up at the next call
            }
        }
    }
    Problem(const Problem&) = delete;
    Problem& operator=(const Problem&) = delete;
    std::vector<std::int32_t> c() const {
        std::vector<std::int32_t> h(std::size_t(n) * n);
        gl::cuda::memcpy(h.data(), C, h.size() * sizeof(std::int32_t), gl::cuda::CopyKind::device_to_host);
        return h;
    }
};

enum class Kernel { peer, dp4a, wmma };
constexpr Kernel kKernels[] = {Kernel::peer, Kernel::dp4a, Kernel::wmma};

void run_ours(Kernel kernel, const Problem& p) {
    const auto k = kernel == Kernel::dp4a ? gl::kernels::CudaIgemm::dp4a : gl::kernels::CudaIgemm::wmma;
#if defined(__CUDACC__)
    gl::kernels::cuda_igemm_device(k, p.n, p.n, p.n, p.A, p.B, p.C);
#else
    gl::kernels::cuda_igemm(k, p.n, p.n, p.n, p.A, p.B, p.C);  // the runtime's memory is host memory
#endif
}

#if defined(__CUDACC__)
using gl::bench::gpu::check_cublas;

std::string name(Kernel k) {
    return k == Kernel::peer ? "cublasLtMatmul" : k == Kernel::dp4a ? "dp4a" : "wmma";
}

/// cuBLASLt's INT8 matmul for one size, set up once. cuBLASLt is column-major: our
/// row-major C (n x n) is its C^T = B A^T, with B (n x K row-major) read as K x n
/// column-major and transposed, A read as K x n column-major as it is: "TN".
class LtInt8 {
public:
    explicit LtInt8(int n) {
        check_cublas(cublasLtCreate(&lt_), "cublasLtCreate");
        check_cublas(cublasLtMatmulDescCreate(&op_, CUBLAS_COMPUTE_32I, CUDA_R_32I), "cublasLtMatmulDescCreate");
        const cublasOperation_t transpose = CUBLAS_OP_T;
        check_cublas(cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_TRANSA, &transpose, sizeof transpose),
                     "cublasLtMatmulDescSetAttribute");
        check_cublas(cublasLtMatrixLayoutCreate(&b_, CUDA_R_8I, n, n, n), "cublasLtMatrixLayoutCreate");
        check_cublas(cublasLtMatrixLayoutCreate(&a_, CUDA_R_8I, n, n, n), "cublasLtMatrixLayoutCreate");
        check_cublas(cublasLtMatrixLayoutCreate(&c_, CUDA_R_32I, n, n, n), "cublasLtMatrixLayoutCreate");
        workspace_ = gl::cuda::malloc_n<char>(kWorkspace);
    }
    ~LtInt8() {
        cublasLtMatrixLayoutDestroy(c_), cublasLtMatrixLayoutDestroy(a_), cublasLtMatrixLayoutDestroy(b_);
        cublasLtMatmulDescDestroy(op_), cublasLtDestroy(lt_);
        try {
            gl::cuda::free(workspace_);
        } catch (...) {
        }
    }
    LtInt8(const LtInt8&) = delete;
    LtInt8& operator=(const LtInt8&) = delete;
    void run(const Problem& p) const {
        const std::int32_t one = 1, zero = 0;
        check_cublas(cublasLtMatmul(lt_, op_, &one, p.B, b_, p.A, a_, &zero, p.C, c_, p.C, c_, nullptr, workspace_,
                                    kWorkspace, nullptr),
                     "cublasLtMatmul");
    }

private:
    static constexpr std::size_t kWorkspace = 32 << 20;  // lets the heuristic pick split-K and friends
    cublasLtHandle_t lt_ = nullptr;
    cublasLtMatmulDesc_t op_ = nullptr;
    cublasLtMatrixLayout_t a_ = nullptr, b_ = nullptr, c_ = nullptr;
    char* workspace_ = nullptr;
};

void run(Kernel kernel, const Problem& p) {
    if (kernel != Kernel::peer) return run_ours(kernel, p);
    static int made_for = 0;
    static std::unique_ptr<LtInt8> lt;
    if (made_for != p.n) lt = std::make_unique<LtInt8>(p.n), made_for = p.n;
    lt->run(p);
}
#else
std::string name(Kernel k) {
    return k == Kernel::peer ? "host int32 loop (stands in for cublasLtMatmul)"
           : k == Kernel::dp4a ? "dp4a (CPU runtime)"
                               : "wmma (CPU runtime)";
}

void run(Kernel kernel, const Problem& p) {
    if (kernel != Kernel::peer) return run_ours(kernel, p);
    const int n = p.n;
    for (int i = 0; i < n; ++i)
        for (int j = 0; j < n; ++j) {
            std::int32_t acc = 0;
            for (int k = 0; k < n; ++k) acc += std::int32_t(p.A[std::size_t(i) * n + k]) * p.B[std::size_t(j) * n + k];
            p.C[std::size_t(i) * n + j] = acc;
        }
}
#endif

/// Both kernels against the peer: integer sums, so exactly equal.
bool check_ours() {
    const int n = gl::bench::gpu::kOnGpu ? 512 : 64;  // the CPU runtime's WMMA does 32x the work
    const Problem p(n);
    run(Kernel::peer, p);
    gl::cuda::synchronize();
    const auto want = p.c();
    bool all_equal = true;
    for (Kernel k : {Kernel::dp4a, Kernel::wmma}) {
        gl::cuda::memset(p.C, 0x5a, want.size() * sizeof(std::int32_t));  // not a sum anyone computes
        run(k, p);
        gl::cuda::synchronize();
        const auto got = p.c();
        std::size_t differ = 0;
        for (std::size_t i = 0; i < got.size(); ++i) differ += got[i] != want[i];
        std::printf("check: %s vs %s at n=%d, %zu of %zu results differ\n", name(k).c_str(), name(Kernel::peer).c_str(),
                    n, differ, got.size());
        all_equal = all_equal && differ == 0;
    }
    return all_equal;
}

std::string markdown_table(const std::vector<Timing>& t, const std::vector<int>& sizes,
                           const gl::cuda::DeviceStatus& gpu) {
    std::vector<std::string> labels;
    for (Kernel k : kKernels) labels.push_back(name(k) + (k == Kernel::peer ? " (peer)" : " (ours)"));
    return gl::bench::gpu::table_head(
               "INT8 GEMM (DP4A, WMMA) vs cuBLASLt", "a host loop stands in for cuBLASLt", "cuda_igemm_gpu_bench", gpu,
               "GOP/s (2n^3 integer operations / median time per launch, launches batched between CUDA events), and "
               "in brackets the ratio to " + name(Kernel::peer) + " (int8 in, int32 compute) in the same run.") +
           gl::bench::gpu::rate_rows(t, sizes, labels);
}

/// Checks both kernels against the peer (unless --no_check), then times each at each size.
bool measure(const gl::bench::gpu::Options& opt, std::vector<Timing>& timings) {
    gl::bench::gpu::check_sizes(opt.sizes, 16, "the WMMA tile");
    if (opt.check && !check_ours()) {
        std::printf("FAILED: an INT8 kernel disagrees with %s: not timing\n", name(Kernel::peer).c_str());
        return false;
    }
    gl::bench::gpu::time_every<Problem>(opt.sizes, kKernels, name, run, timings);
    return true;
}

}  // namespace

int main(int argc, char** argv) {
    return gl::bench::gpu::run_program("cuda_igemm_gpu_bench", argc, argv, measure, markdown_table);
}
