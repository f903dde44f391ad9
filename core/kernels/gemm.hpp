/// @file
/// @brief The GEMM kernel registry: named matrix-multiply kernels the matmul op picks from.
///
/// Owns: the calling convention every GEMM kernel follows and the table of kernels. The
/// table lists the kernel families in order: the CPU FP32 versions
/// (kernels/cpu/sgemm/sgemm.hpp), the peer libraries (kernels/cpu/peers/peers.hpp) and
/// the CUDA family (kernels/cuda/sgemm.hpp); labs may register more. Autograd and the
/// matmul op never change.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

namespace gl::kernels {

/// One row-major GEMM problem: C[M x N] = op(A)[M x K] * op(B)[K x N], overwriting C.
/// op(X) is X or its transpose. Element (i, k) of op(A) is A[i * lda + k] when
/// !trans_a and A[k * lda + i] when trans_a; likewise for B; C(i, j) is C[i * ldc + j].
template <class T>
struct GemmArgs {
    bool trans_a = false;   ///< read A transposed
    bool trans_b = false;   ///< read B transposed
    std::int64_t M = 0;     ///< rows of C
    std::int64_t N = 0;     ///< columns of C
    std::int64_t K = 0;     ///< the summed dimension
    const T* A = nullptr;   ///< left operand
    std::int64_t lda = 0;   ///< row stride of A as stored
    const T* B = nullptr;   ///< right operand
    std::int64_t ldb = 0;   ///< row stride of B as stored
    T* C = nullptr;         ///< result (overwritten)
    std::int64_t ldc = 0;   ///< row stride of C
};

/// The arguments for operands stored densely, row by row: op(A) M x K, op(B) K x N and C
/// M x N, each row followed by @p pad unused elements (0 for contiguous matrices; tests
/// pad to check that kernels honour the leading dimensions). Leading dimensions are at
/// least 1, as BLAS requires, even for empty matrices.
template <class T>
GemmArgs<T> dense_gemm_args(bool trans_a, bool trans_b, std::int64_t M, std::int64_t N, std::int64_t K, const T* A,
                            const T* B, T* C, std::int64_t pad = 0) {
    const auto ld = [pad](std::int64_t row_length) { return std::max<std::int64_t>(row_length + pad, 1); };
    return {trans_a, trans_b, M, N, K, A, ld(trans_a ? M : K), B, ld(trans_b ? K : N), C, ld(N)};
}

/// Signature of a float32 GEMM kernel.
using SgemmFn = void (*)(const GemmArgs<float>&);
/// Signature of a float64 GEMM kernel.
using DgemmFn = void (*)(const GemmArgs<double>&);

/// A named kernel and the one idea it adds over its predecessor.
struct GemmKernel {
    std::string name;        ///< registry key, e.g. "naive", "threaded", "openblas"
    std::string idea;        ///< one line for tables: what this version does
    SgemmFn sgemm = nullptr; ///< float32 entry point (required)
    DgemmFn dgemm = nullptr; ///< float64 entry point (optional)
    /// Why the kernel cannot run on this machine ("" when it can), e.g. the CUDA driver's
    /// message when there is no GPU; null for kernels that always can.
    std::string (*why_unavailable)() = nullptr;
};

/// Adds a kernel (replacing one of the same name).
void register_gemm(const GemmKernel& kernel);
/// The kernel called @p name; throws an error listing the known names otherwise.
const GemmKernel& find_gemm(const std::string& name);
/// All registered kernels, in registration order.
std::vector<GemmKernel> gemm_kernels();
/// Why @p kernel cannot run here, or "" when it can.
std::string why_unavailable(const GemmKernel& kernel);
/// Makes @p name the kernel matmul uses; throws, with the reason, if it cannot run here.
void set_default_gemm(const std::string& name);
/// The kernel matmul uses now ("medium", the fastest of ours at every shape, unless changed).
const GemmKernel& default_gemm();

/// Runs @p args through the default kernel (float32).
void gemm(const GemmArgs<float>& args);
/// Runs @p args through the default kernel, or the naive one if it has no float64 path.
void gemm(const GemmArgs<double>& args);

}  // namespace gl::kernels
