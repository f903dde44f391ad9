// The oracle of the CUDA SGEMM tests (tests/cuda_cpu/ and the graded lab 03 tests): random
// matrices, a plain triple loop in double precision, and a comparison with float rounding
// taken into account.
#pragma once

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "base/rng.hpp"

namespace gl::test {

/// A GEMM shape: C (M x N) = A (M x K) * B (K x N), all row-major.
struct GemmShape {
    int M, N, K;
};

/// "MxNxK", for test names and messages.
inline std::string shape_name(const GemmShape& s) {
    return std::to_string(s.M) + "x" + std::to_string(s.N) + "x" + std::to_string(s.K);
}

/// @p n floats uniform in [-1, 1), the same for the same seed.
inline std::vector<float> random_matrix(std::size_t n, std::uint64_t seed) {
    Rng rng(seed);
    std::vector<float> m(n);
    for (float& x : m) x = static_cast<float>(rng.uniform(-1.0, 1.0));
    return m;
}

/// The plain triple loop, accumulating in double: the oracle.
struct ReferenceGemm {
    std::vector<double> C;      ///< A * B
    std::vector<double> bound;  ///< sum over k of |A(i,k) * B(k,j)|, to scale the tolerance
};

inline ReferenceGemm reference_gemm(const GemmShape& s, const std::vector<float>& A,
                                    const std::vector<float>& B) {
    ReferenceGemm r{std::vector<double>(std::size_t(s.M) * s.N), std::vector<double>(std::size_t(s.M) * s.N)};
    for (int i = 0; i < s.M; ++i)
        for (int j = 0; j < s.N; ++j) {
            double acc = 0, bound = 0;
            for (int k = 0; k < s.K; ++k) {
                const double p = double(A[std::size_t(i) * s.K + k]) * double(B[std::size_t(k) * s.N + j]);
                acc += p;
                bound += std::fabs(p);
            }
            r.C[std::size_t(i) * s.N + j] = acc;
            r.bound[std::size_t(i) * s.N + j] = bound;
        }
    return r;
}

/// The wrong elements of @p C (at most 5 listed, then how many in all); "" when every
/// element is right. Float accumulation of K products errs by at most about
/// K * eps * sum |products|; a NaN (an element never written) is always wrong.
inline std::string mismatches(const GemmShape& s, const std::vector<float>& C, const ReferenceGemm& ref) {
    std::ostringstream out;
    int bad = 0;
    for (int i = 0; i < s.M; ++i)
        for (int j = 0; j < s.N; ++j) {
            const std::size_t at = std::size_t(i) * s.N + j;
            const double tolerance = 2.0 * (s.K + 1) * FLT_EPSILON * ref.bound[at] + 1e-30;
            if (!(std::fabs(C[at] - ref.C[at]) <= tolerance) && ++bad <= 5)
                out << "C(" << i << "," << j << ") = " << C[at] << ", expected " << ref.C[at]
                    << " (tolerance " << tolerance << ")\n";
        }
    if (bad > 0) out << bad << " of the " << s.M * s.N << " elements of the " << shape_name(s) << " result are wrong";
    return out.str();
}

}  // namespace gl::test
