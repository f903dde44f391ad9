// The CUDA SGEMM family behind the GEMM registry (kernels/gemm.hpp), so that matmul, and
// with it the whole training step, runs on a GPU when there is one:
//
//   "cuda"      the best version (kernels/cuda/sgemm.cuh) on the GPU;
//   "cuda_cpu"  the same kernel on the CPU runtime: slow, but it runs everywhere, so CI
//               tests this path (transposes, strides, autograd through it) without a GPU.
//
// Nothing above the registry changes: autograd calls matmul, matmul calls the registry.
// Selecting "cuda" without a GPU fails at once with the CUDA driver's reason
// (set_default_gemm asks why_unavailable), e.g. `gradlab train --gemm cuda`.
//
// The CUDA kernels take contiguous row-major operands. The registry's convention allows a
// transposed operand and row strides (a Linear layer reads its weight transposed, and the
// backward pass transposes both operands), so such operands are first copied, transposed,
// into contiguous arrays on the host: O(MK + KN) work against the product's O(MNK).
// Tensors live in host memory, so on a GPU every GEMM also copies A and B to the device and
// C back: for small layers those copies, not the kernel, set the time (claim CHOICE-1).
#include <climits>
#include <functional>
#include <string>
#include <vector>

#include "base/error.hpp"
#include "cuda_cpu/error.hpp"
#include "kernels/cuda/sgemm.hpp"
#include "kernels/gemm.hpp"
#if GRADLAB_HAVE_CUDA
#include "cuda_cpu/device_status.hpp"
#endif

namespace gl::kernels {
namespace {

/// op(X), @p rows x @p cols, as a contiguous row-major array: X itself when it already is
/// one, else a copy in @p buffer (read transposed when @p trans).
const float* contiguous(const float* X, bool trans, std::int64_t rows, std::int64_t cols,
                        std::int64_t ld, std::vector<float>& buffer) {
    if (!trans && ld == cols) return X;
    buffer.resize(static_cast<std::size_t>(rows * cols));
    for (std::int64_t i = 0; i < rows; ++i)
        for (std::int64_t j = 0; j < cols; ++j)
            buffer[static_cast<std::size_t>(i * cols + j)] = trans ? X[j * ld + i] : X[i * ld + j];
    return buffer.data();
}

/// A host entry of the CUDA family: C = A * B, contiguous row-major, as in sgemm.hpp.
using ContiguousSgemm = std::function<void(int M, int N, int K, const float* A, const float* B, float* C)>;

/// Runs @p run on contiguous copies of the operands (where needed) and writes C with its stride.
void run_contiguous(const GemmArgs<float>& g, const ContiguousSgemm& run) {
    // The kernels index with int: every matrix must have fewer than 2^31 elements.
    const auto fits = [](std::int64_t rows, std::int64_t cols) { return rows * cols <= INT_MAX; };
    check(fits(g.M, g.K) && fits(g.K, g.N) && fits(g.M, g.N),
          "CUDA GEMM: the CUDA kernels index with int, so each matrix must have fewer than 2^31 "
          "elements (got M=" + std::to_string(g.M) + ", N=" + std::to_string(g.N) +
              ", K=" + std::to_string(g.K) + ")");
    if (g.M == 0 || g.N == 0) return;
    if (g.K == 0) {  // an empty sum: C = 0, nothing to launch
        for (std::int64_t i = 0; i < g.M; ++i)
            for (std::int64_t j = 0; j < g.N; ++j) g.C[i * g.ldc + j] = 0.0f;
        return;
    }
    std::vector<float> a_buffer, b_buffer, c_buffer;
    const float* A = contiguous(g.A, g.trans_a, g.M, g.K, g.lda, a_buffer);
    const float* B = contiguous(g.B, g.trans_b, g.K, g.N, g.ldb, b_buffer);
    float* C = g.C;
    if (g.ldc != g.N) {
        c_buffer.resize(static_cast<std::size_t>(g.M * g.N));
        C = c_buffer.data();
    }
    run(static_cast<int>(g.M), static_cast<int>(g.N), static_cast<int>(g.K), A, B, C);
    if (C != g.C)
        for (std::int64_t i = 0; i < g.M; ++i)
            for (std::int64_t j = 0; j < g.N; ++j) g.C[i * g.ldc + j] = C[i * g.N + j];
}

void sgemm_cuda_cpu(const GemmArgs<float>& g) { cuda_gemm_strided(cuda_sgemm_best_version(), g); }

/// Why there is no GPU to run on, or "" when there is one.
std::string why_no_gpu() {
#if GRADLAB_HAVE_CUDA
    const gl::cuda::DeviceStatus status = gl::cuda::device_status();
    return status.available ? std::string() : "no CUDA device (" + status.message + ")";
#else
    return "this build has no CUDA (nvcc was not found when meson configured it; install the "
           "CUDA toolkit at /usr/local/cuda and configure a new build)";
#endif
}

void sgemm_cuda([[maybe_unused]] const GemmArgs<float>& g) {  // unused without CUDA
    const std::string why = why_no_gpu();
    if (!why.empty())
        throw gl::cuda::Error(gl::cuda::ErrorCode::no_device,
                              "GEMM kernel 'cuda' needs a GPU: " + why +
                                  "; choose a CPU kernel, or 'cuda_cpu' for the same kernel on the CPU runtime");
#if GRADLAB_HAVE_CUDA
    run_contiguous(g, [](int M, int N, int K, const float* A, const float* B, float* C) {
        cuda_gemm_device_from_host(cuda_sgemm_best_version(), M, N, K, A, B, C);
    });
#endif
}

}  // namespace

void cuda_gemm_strided(int version, const GemmArgs<float>& args) {
    run_contiguous(args, [version](int M, int N, int K, const float* A, const float* B, float* C) {
        cuda_gemm(version, M, N, K, A, B, C);
    });
}

std::vector<GemmKernel> cuda_gemm_kernels() {
    return {{"cuda_cpu", "the best CUDA SGEMM version on the CPU runtime (slow; runs without a GPU)", &sgemm_cuda_cpu,
             nullptr, nullptr},
            {"cuda", "the best CUDA SGEMM version on the GPU (operands copied over PCIe per call)", &sgemm_cuda,
             nullptr, &why_no_gpu}};
}

}  // namespace gl::kernels
