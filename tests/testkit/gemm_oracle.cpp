#include "testkit/gemm_oracle.hpp"

#include <cfloat>
#include <cmath>
#include <cstddef>
#include <sstream>

namespace gl::testkit {

std::string shape_name(const GemmShape& s) {
    return std::to_string(s.M) + "x" + std::to_string(s.N) + "x" + std::to_string(s.K);
}

ReferenceGemm reference_gemm(const GemmShape& s, const std::vector<float>& A, const std::vector<float>& B) {
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

std::string mismatches(const GemmShape& s, const std::vector<float>& C, const ReferenceGemm& ref) {
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

}  // namespace gl::testkit
