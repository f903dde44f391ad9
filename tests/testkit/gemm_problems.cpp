#include "testkit/gemm_problems.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "testkit/random.hpp"

namespace gl::testkit {

std::int64_t GemmProblem::lda() const { return std::max<std::int64_t>((ta ? M : K) + pad, 1); }
std::int64_t GemmProblem::ldb() const { return std::max<std::int64_t>((tb ? K : N) + pad, 1); }
std::int64_t GemmProblem::ldc() const { return std::max<std::int64_t>(N + pad, 1); }
std::size_t GemmProblem::a_elements() const { return static_cast<std::size_t>((ta ? K : M) * lda()); }
std::size_t GemmProblem::b_elements() const { return static_cast<std::size_t>((tb ? N : K) * ldb()); }

std::string GemmProblem::str() const {
    std::ostringstream os;
    os << "M=" << M << " N=" << N << " K=" << K << " trans_a=" << ta << " trans_b=" << tb << " pad=" << pad;
    return os.str();
}

std::vector<GemmProblem> odd_gemm_problems() {
    std::vector<GemmProblem> ps{{1, 1, 1, false, false},    {17, 33, 9, false, false},  {64, 10, 128, false, true},
                                {31, 7, 65, true, false},   {5, 129, 3, true, true},    {100, 75, 130, false, false},
                                {13, 37, 300, false, true, 3}, {37, 70, 260, true, false, 5}, {3, 5, 0, false, false},
                                {0, 4, 3, false, false},   {4, 0, 3, true, true}};
    for (bool ta : {false, true})
        for (bool tb : {false, true}) ps.push_back({203, 97, 517, ta, tb, 1});  // crosses MC and KC blocks
    return ps;
}

std::vector<float> run_gemm(const kernels::GemmKernel& kernel, const GemmProblem& p, const std::vector<float>& A,
                            const std::vector<float>& B, std::string* error) {
    const std::int64_t ldc = p.ldc();
    std::vector<float> C(static_cast<std::size_t>(p.M * ldc), -7.0f);
    kernel.sgemm(kernels::dense_gemm_args(p.ta, p.tb, p.M, p.N, p.K, A.data(), B.data(), C.data(), p.pad));
    // Keep only the M x N result; the padding must be untouched.
    std::vector<float> out;
    bool wrote_outside = false;
    for (std::int64_t i = 0; i < p.M; ++i) {
        for (std::int64_t j = 0; j < p.N; ++j) out.push_back(C[static_cast<std::size_t>(i * ldc + j)]);
        for (std::int64_t j = p.N; j < ldc; ++j) wrote_outside |= C[static_cast<std::size_t>(i * ldc + j)] != -7.0f;
    }
    if (wrote_outside && error) *error = kernel.name + " wrote outside C (into the padding of its rows) for " + p.str();
    return out;
}

std::string mismatches_with_naive(const kernels::GemmKernel& kernel, const std::string& label) {
    const auto& naive = kernels::find_gemm("naive");
    for (const GemmProblem& p : odd_gemm_problems()) {
        const auto A = random_floats(p.a_elements(), 1);
        const auto B = random_floats(p.b_elements(), 2);
        std::string error;
        const auto expected = run_gemm(naive, p, A, B);
        const auto got = run_gemm(kernel, p, A, B, &error);
        if (!error.empty()) return label + ": " + error;
        const double tolerance = 1e-4 * std::sqrt(static_cast<double>(p.K)) + 1e-6;
        for (std::size_t i = 0; i < got.size(); ++i)
            if (!(std::fabs(got[i] - expected[i]) <= tolerance)) {
                std::ostringstream os;
                const auto n = static_cast<std::size_t>(p.N);
                os << label << ": wrong C[" << i / n << ", " << i % n << "] = " << got[i] << ", expected "
                   << expected[i] << " (tolerance " << tolerance << ") for " << p.str();
                return os.str();
            }
    }
    return "";
}

}  // namespace gl::testkit
