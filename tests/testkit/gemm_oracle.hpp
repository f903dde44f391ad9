/// @file
/// @brief The GEMM oracle of the tests and benchmarks: a plain triple loop in double
/// precision, and a comparison that allows for float rounding. Needs nothing from the core
/// library, so the nvcc-only build of the GPU benchmark can compile it.
#pragma once

#include <string>
#include <vector>

namespace gl::testkit {

/// A GEMM shape: C (M x N) = A (M x K) * B (K x N), all row-major and dense.
struct GemmShape {
    int M, N, K;  ///< rows of C, columns of C, the shared dimension
};

/// "MxNxK", for test names and messages.
std::string shape_name(const GemmShape& s);

/// What the oracle computes for one problem.
struct ReferenceGemm {
    std::vector<double> C;      ///< A * B
    std::vector<double> bound;  ///< sum over k of |A(i,k) * B(k,j)|, to scale the tolerance
};

/// The plain triple loop, accumulating in double: the oracle.
ReferenceGemm reference_gemm(const GemmShape& s, const std::vector<float>& A, const std::vector<float>& B);

/// The wrong elements of @p C (at most 5 listed, then how many in all); "" when every
/// element is right. Float accumulation of K products errs by at most about
/// K * eps * sum |products|; a NaN (an element never written) is always wrong.
std::string mismatches(const GemmShape& s, const std::vector<float>& C, const ReferenceGemm& ref);

}  // namespace gl::testkit
