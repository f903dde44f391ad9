// Unit tests: every registered GEMM kernel against the naive oracle, all transposes,
// shapes that are not multiples of any block size.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "base/rng.hpp"
#include "kernels/cpu/sgemm/packed.hpp"
#include "kernels/gemm.hpp"
#include "parallel/thread_pool.hpp"
#include "ops/ops.hpp"

namespace gl {
namespace {

using kernels::GemmArgs;

struct Problem {
    std::int64_t M, N, K;
    bool ta, tb;
    std::int64_t pad = 0;  // extra elements per stored row (lda, ldb, ldc larger than needed)
};

std::vector<float> random_vector(std::size_t n, std::uint64_t seed) {
    Rng rng(seed);
    std::vector<float> v(n);
    for (auto& x : v) x = static_cast<float>(rng.uniform(-1, 1));
    return v;
}

std::vector<float> run(const kernels::GemmKernel& k, const Problem& p, const std::vector<float>& A,
                       const std::vector<float>& B) {
    // Leading dimensions are at least 1, as BLAS requires, even for empty matrices.
    const std::int64_t ldc = std::max<std::int64_t>(p.N + p.pad, 1);
    std::vector<float> C(static_cast<std::size_t>(p.M * ldc), -7.0f);  // garbage: kernels overwrite
    const auto g = kernels::dense_gemm_args(p.ta, p.tb, p.M, p.N, p.K, A.data(), B.data(), C.data(), p.pad);
    k.sgemm(g);
    // Keep only the M x N result; the padding must be untouched.
    std::vector<float> out;
    for (std::int64_t i = 0; i < p.M; ++i) {
        for (std::int64_t j = 0; j < p.N; ++j) out.push_back(C[static_cast<std::size_t>(i * ldc + j)]);
        for (std::int64_t j = p.N; j < ldc; ++j)
            if (C[static_cast<std::size_t>(i * ldc + j)] != -7.0f) ADD_FAILURE() << k.name << " wrote outside C";
    }
    return out;
}

class EveryKernel : public ::testing::TestWithParam<std::string> {};

// Shapes smaller than, equal to and not multiples of every block and micro-tile, all four
// transposes, strided operands, and the empty cases.
std::vector<Problem> odd_problems() {
    std::vector<Problem> ps{{1, 1, 1, false, false},    {17, 33, 9, false, false},  {64, 10, 128, false, true},
                            {31, 7, 65, true, false},   {5, 129, 3, true, true},    {100, 75, 130, false, false},
                            {13, 37, 300, false, true, 3}, {37, 70, 260, true, false, 5}, {3, 5, 0, false, false},
                            {0, 4, 3, false, false},   {4, 0, 3, true, true}};
    for (bool ta : {false, true})
        for (bool tb : {false, true}) ps.push_back({203, 97, 517, ta, tb, 1});  // crosses MC and KC blocks
    return ps;
}

void expect_matches_naive(const kernels::GemmKernel& kernel, const std::string& label) {
    const auto& naive = kernels::find_gemm("naive");
    for (const Problem& p : odd_problems()) {
        const std::int64_t lda = std::max<std::int64_t>((p.ta ? p.M : p.K) + p.pad, 1);
        const std::int64_t ldb = std::max<std::int64_t>((p.tb ? p.K : p.N) + p.pad, 1);
        const auto A = random_vector(static_cast<std::size_t>((p.ta ? p.K : p.M) * lda), 1);
        const auto B = random_vector(static_cast<std::size_t>((p.tb ? p.N : p.K) * ldb), 2);
        const auto expected = run(naive, p, A, B);
        const auto got = run(kernel, p, A, B);
        ASSERT_EQ(got.size(), expected.size());
        for (std::size_t i = 0; i < got.size(); ++i)
            ASSERT_NEAR(got[i], expected[i], 1e-4 * std::sqrt(static_cast<double>(p.K)))
                << label << " M=" << p.M << " N=" << p.N << " K=" << p.K << " ta=" << p.ta << " tb=" << p.tb
                << " pad=" << p.pad << " at " << i;
    }
}

TEST_P(EveryKernel, MatchesNaiveOnOddShapesAndTransposes) {
    const auto& kernel = kernels::find_gemm(GetParam());
    if (const std::string why = kernels::why_unavailable(kernel); !why.empty())
        GTEST_SKIP() << "kernel " << GetParam() << " cannot run here: " << why;
    expect_matches_naive(kernel, GetParam());
}

// The packed kernels dispatch on the CPU's instruction sets: force each level this CPU
// has, so every micro-kernel is tested, not only the fastest.
TEST(GemmDispatch, EveryMicroKernelThisCpuRunsMatchesNaive) {
    for (const auto isa : kernels::packed::supported_isas()) {
        kernels::packed::force_isa(isa);
        EXPECT_EQ(kernels::packed::active_isa(), isa);
        for (const char* name : {"packed_simd", "threaded"})
            expect_matches_naive(kernels::find_gemm(name), std::string(name) + "/" + kernels::packed::to_string(isa));
    }
    kernels::packed::force_isa(std::nullopt);
    EXPECT_EQ(kernels::packed::active_isa(), kernels::packed::supported_isas().back());
}

TEST(GemmPacking, TransposeIntoSliverMatchesItsDefinitionOnEveryIsa) {
    // dst[k * nr + j] = src[j * ld + k] for j < cols, zeros beyond: full slivers take the
    // register-transpose path on AVX-512, ragged ones and the k tail the plain loop.
    Rng rng(11);
    for (const auto isa : kernels::packed::supported_isas()) {
        kernels::packed::force_isa(isa);
        for (int nr : {6, 12, 16, 32})
            for (std::int64_t cols : {std::int64_t{nr}, std::int64_t{nr - 3}})
                for (std::int64_t kc : {1, 15, 16, 17, 50}) {
                    const std::int64_t ld = kc + 5;
                    std::vector<float> src(static_cast<std::size_t>(cols * ld));
                    for (auto& v : src) v = static_cast<float>(rng.uniform());
                    std::vector<float> dst(static_cast<std::size_t>(kc * nr), -1.0f);
                    kernels::packed::transpose_into_sliver(src.data(), ld, cols, kc, nr, dst.data());
                    for (std::int64_t k = 0; k < kc; ++k)
                        for (std::int64_t j = 0; j < nr; ++j)
                            ASSERT_EQ(dst[static_cast<std::size_t>(k * nr + j)],
                                      j < cols ? src[static_cast<std::size_t>(j * ld + k)] : 0.0f)
                                << kernels::packed::to_string(isa) << ", nr " << nr << ", cols " << cols << ", kc " << kc
                                << ", k " << k << ", j " << j;
                }
    }
    kernels::packed::force_isa(std::nullopt);
}

TEST(GemmDispatch, PortableIsAlwaysThereAndUnsupportedIsasAreRefused) {
    const auto isas = kernels::packed::supported_isas();
    ASSERT_FALSE(isas.empty());
    EXPECT_EQ(isas.front(), kernels::packed::Isa::Portable);
    for (const auto isa : {kernels::packed::Isa::Avx2, kernels::packed::Isa::Avx512})
        if (std::find(isas.begin(), isas.end(), isa) == isas.end()) {
            EXPECT_THROW(kernels::packed::force_isa(isa), Error);
        }
}

TEST(GemmThreaded, SameBitsForAnyThreadCount) {
    // Each element of C is summed in the same order whichever stripe computes it.
    const Problem p{301, 257, 300, false, true};
    const auto A = random_vector(static_cast<std::size_t>(p.M * p.K), 3);
    const auto B = random_vector(static_cast<std::size_t>(p.K * p.N), 4);
    const int before = get_num_threads();
    set_num_threads(1);
    const auto one = run(kernels::find_gemm("threaded"), p, A, B);
    for (int n : {2, 3, 8}) {
        set_num_threads(n);
        EXPECT_EQ(run(kernels::find_gemm("threaded"), p, A, B), one) << n << " threads";
    }
    set_num_threads(before);
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
    EXPECT_EQ(before, "threaded") << "the fastest of our kernels is the default";
    EXPECT_THAT([] { kernels::find_gemm("nope"); },
                ::testing::ThrowsMessage<Error>(::testing::HasSubstr("known kernels: naive")));
}

}  // namespace
}  // namespace gl
