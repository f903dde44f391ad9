/// @file
/// @brief GEMM problems for the tests of the CPU GEMM registry: shapes that are not
/// multiples of any block, every transpose, padded rows, empty cases; and the check of a
/// kernel against the naive one on all of them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/gemm.hpp"

namespace gl::testkit {

/// One problem: C (M x N) = op(A) * op(B), operands stored densely with @p pad extra
/// elements per stored row (lda, ldb, ldc larger than needed).
struct GemmProblem {
    std::int64_t M, N, K;  ///< rows of C, columns of C, the shared dimension
    bool ta = false;       ///< A stored as K x M (transposed)
    bool tb = false;       ///< B stored as N x K (transposed)
    std::int64_t pad = 0;  ///< extra elements per stored row

    std::int64_t lda() const;  ///< A's row stride (at least 1, as BLAS requires)
    std::int64_t ldb() const;  ///< B's row stride
    std::int64_t ldc() const;  ///< C's row stride
    std::size_t a_elements() const;  ///< floats A's storage spans
    std::size_t b_elements() const;  ///< floats B's storage spans
    std::string str() const;  ///< "M=.. N=.. K=.. trans_a=.. trans_b=.. pad=.."
};

/// Shapes smaller than, equal to and not multiples of every block and micro-tile, all four
/// transposes, strided operands, and the empty cases.
std::vector<GemmProblem> odd_gemm_problems();

/// Runs @p kernel on @p p with operands @p A and @p B (a_elements(), b_elements() long)
/// and returns the M x N result, dense. C starts as garbage (-7): kernels overwrite it.
/// A write into the padding of C is reported in @p error (when given).
std::vector<float> run_gemm(const kernels::GemmKernel& kernel, const GemmProblem& p, const std::vector<float>& A,
                            const std::vector<float>& B, std::string* error = nullptr);

/// Checks @p kernel against the naive loop on every odd problem (random operands, a
/// tolerance of 1e-4 sqrt(K)). Returns "" when all match, else which problem and which
/// element failed first, starting with @p label.
std::string mismatches_with_naive(const kernels::GemmKernel& kernel, const std::string& label);

}  // namespace gl::testkit
