// Unit tests: every registered GEMM kernel against the naive oracle, all transposes,
// shapes that are not multiples of any block size.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "base/rng.hpp"
#include "kernels/gemm.hpp"
#include "ops/ops.hpp"

namespace gl {
namespace {

using kernels::GemmArgs;

struct Problem {
    std::int64_t M, N, K;
    bool ta, tb;
};

std::vector<float> random_vector(std::size_t n, std::uint64_t seed) {
    Rng rng(seed);
    std::vector<float> v(n);
    for (auto& x : v) x = static_cast<float>(rng.uniform(-1, 1));
    return v;
}

std::vector<float> run(const kernels::GemmKernel& k, const Problem& p, const std::vector<float>& A,
                       const std::vector<float>& B) {
    std::vector<float> C(static_cast<std::size_t>(p.M * p.N), -7.0f);  // garbage: kernels overwrite
    GemmArgs<float> g;
    g.trans_a = p.ta;
    g.trans_b = p.tb;
    g.M = p.M;
    g.N = p.N;
    g.K = p.K;
    g.A = A.data();
    g.lda = p.ta ? p.M : p.K;
    g.B = B.data();
    g.ldb = p.tb ? p.K : p.N;
    g.C = C.data();
    g.ldc = p.N;
    k.sgemm(g);
    return C;
}

class EveryKernel : public ::testing::TestWithParam<std::string> {};

TEST_P(EveryKernel, MatchesNaiveOnOddShapesAndTransposes) {
    const auto& kernel = kernels::find_gemm(GetParam());
    if (const std::string why = kernels::why_unavailable(kernel); !why.empty())
        GTEST_SKIP() << "kernel " << GetParam() << " cannot run here: " << why;
    const auto& naive = kernels::find_gemm("naive");
    for (Problem p : {Problem{1, 1, 1, false, false}, Problem{17, 33, 9, false, false}, Problem{64, 10, 128, false, true},
                      Problem{31, 7, 65, true, false}, Problem{5, 129, 3, true, true}, Problem{100, 75, 130, false, false}}) {
        const auto A = random_vector(static_cast<std::size_t>(p.M * p.K), 1);
        const auto B = random_vector(static_cast<std::size_t>(p.K * p.N), 2);
        const auto expected = run(naive, p, A, B);
        const auto got = run(kernel, p, A, B);
        for (std::size_t i = 0; i < got.size(); ++i)
            ASSERT_NEAR(got[i], expected[i], 1e-4 * std::sqrt(static_cast<double>(p.K)))
                << GetParam() << " M=" << p.M << " N=" << p.N << " K=" << p.K << " ta=" << p.ta
                << " tb=" << p.tb << " at " << i;
    }
}

std::vector<std::string> kernel_names() {
    std::vector<std::string> names;
    for (const auto& k : kernels::gemm_kernels()) names.push_back(k.name);
    return names;
}

INSTANTIATE_TEST_SUITE_P(Registry, EveryKernel, ::testing::ValuesIn(kernel_names()),
                         [](const auto& info) { return info.param; });

TEST(GemmRegistry, DefaultCanBeChangedAndUnknownNamesAreListed) {
    const std::string before = kernels::default_gemm().name;
    kernels::set_default_gemm("naive");
    EXPECT_EQ(kernels::default_gemm().name, "naive");
    const Tensor c = matmul(from_vector<float>({1, 2}, {1, 2}), from_vector<float>({3, 4}, {2, 1}));
    EXPECT_FLOAT_EQ(c.item(), 11);
    kernels::set_default_gemm(before);
    EXPECT_THAT([] { kernels::find_gemm("nope"); },
                ::testing::ThrowsMessage<Error>(::testing::HasSubstr("known kernels: naive")));
}

}  // namespace
}  // namespace gl
