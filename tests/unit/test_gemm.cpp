// Unit tests: every registered GEMM kernel against the naive oracle, all transposes,
// shapes that are not multiples of any block size.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "base/rng.hpp"
#include "kernels/cpu/sgemm/packed.hpp"
#include "kernels/cpu/sgemm/sgemm.hpp"
#include "kernels/gemm.hpp"
#include "parallel/thread_pool.hpp"
#include "ops/ops.hpp"
#include "testkit/gemm_problems.hpp"
#include "testkit/random.hpp"

namespace gl {
namespace {

using kernels::GemmArgs;

using testkit::GemmProblem;
using testkit::random_floats;
using testkit::run_gemm;

class EveryKernel : public ::testing::TestWithParam<std::string> {};

void expect_matches_naive(const kernels::GemmKernel& kernel, const std::string& label) {
    EXPECT_EQ(testkit::mismatches_with_naive(kernel, label), "");
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
        for (const char* name : {"packed_simd", "threaded", "small", "medium"})
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

TEST(GemmPacking, CopyRowsIntoSliverMatchesItsDefinitionOnEveryIsa) {
    // dst[k * nr + j] = src[k * ld + j] for j < cols, zeros up to nr, and nothing written
    // past rows * nr: on AVX-512 each row is one or two masked vector moves (12 lanes of
    // 16 for an A sliver), elsewhere the plain loop.
    Rng rng(12);
    constexpr float kUntouched = -1.0f;
    for (const auto isa : kernels::packed::supported_isas()) {
        kernels::packed::force_isa(isa);
        for (int nr : {4, 6, 12, 16, 32})
            for (std::int64_t cols : {std::int64_t{nr}, std::int64_t{nr - 3}, std::int64_t{1}})
                for (std::int64_t rows : {1, 7, 16}) {
                    const std::int64_t ld = nr + 9;
                    std::vector<float> src(static_cast<std::size_t>(rows * ld));
                    for (auto& v : src) v = static_cast<float>(rng.uniform());
                    std::vector<float> dst(static_cast<std::size_t>(rows * nr + 16), kUntouched);
                    kernels::packed::copy_rows_into_sliver(src.data(), ld, rows, cols, nr, dst.data());
                    const std::string where = kernels::packed::to_string(isa) + ", nr " + std::to_string(nr) +
                                              ", cols " + std::to_string(cols) + ", rows " + std::to_string(rows);
                    for (std::int64_t k = 0; k < rows; ++k)
                        for (std::int64_t j = 0; j < nr; ++j)
                            ASSERT_EQ(dst[static_cast<std::size_t>(k * nr + j)],
                                      j < cols ? src[static_cast<std::size_t>(k * ld + j)] : 0.0f)
                                << where << ", k " << k << ", j " << j;
                    for (std::size_t i = static_cast<std::size_t>(rows * nr); i < dst.size(); ++i)
                        ASSERT_EQ(dst[i], kUntouched) << where << ": wrote past the sliver, at " << i;
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
    const GemmProblem p{301, 257, 300, false, true};
    const auto A = random_floats(static_cast<std::size_t>(p.M * p.K), 3);
    const auto B = random_floats(static_cast<std::size_t>(p.K * p.N), 4);
    const int before = get_num_threads();
    set_num_threads(1);
    const auto one = run_gemm(kernels::find_gemm("threaded"), p, A, B);
    for (int n : {2, 3, 8}) {
        set_num_threads(n);
        EXPECT_EQ(run_gemm(kernels::find_gemm("threaded"), p, A, B), one) << n << " threads";
    }
    set_num_threads(before);
}

// Version 8 packs and blocks as version 5 does, so every tile is summed in the same order
// whichever thread claims it: the same bits as "threaded", on any thread count. The
// shapes cover a column split, a row split (M > N) with a transposed A, and three K
// blocks (the claimed last block adds to the first two).
const GemmProblem kBalancedProblems[] = {{257, 301, 300, false, true}, {700, 90, 1100, true, false},
                                         {200, 300, 2100, false, false}};

TEST(GemmBalanced, SameBitsAsThreadedOnAnyThreadCount) {
    const int before = get_num_threads();
    for (const GemmProblem& p : kBalancedProblems) {
        const auto A = random_floats(static_cast<std::size_t>(p.M * p.K), 3);
        const auto B = random_floats(static_cast<std::size_t>(p.K * p.N), 4);
        set_num_threads(1);
        const auto want = run_gemm(kernels::find_gemm("threaded"), p, A, B);
        for (int n : {1, 2, 3, 8}) {
            set_num_threads(n);
            EXPECT_EQ(run_gemm(kernels::find_gemm("balanced"), p, A, B), want) << p.str() << ", " << n << " threads";
        }
    }
    set_num_threads(before);
}

// The path that takes rows from another stripe, made to run: in a nested region the two
// shares run in order on one thread, and the owner of stripe 0 claims `limit` row blocks
// of its last K block and leaves the rest, which share 1 then does with stripe 0's packed
// panel of B. Same bits as "threaded", and the rows taken over counted (with limit 0,
// all of stripe 0: every row of C, since these shapes are split by columns).
TEST(GemmBalanced, AnotherShareFinishesTheStripeItsOwnerLeft) {
    const int before = get_num_threads();
    set_num_threads(2);
    for (const GemmProblem& p : {kBalancedProblems[0], kBalancedProblems[2]})
        for (std::int64_t limit : {0, 1}) {
            const auto A = random_floats(static_cast<std::size_t>(p.M * p.K), 3);
            const auto B = random_floats(static_cast<std::size_t>(p.K * p.N), 4);
            const auto want = run_gemm(kernels::find_gemm("threaded"), p, A, B);
            std::vector<float> C(static_cast<std::size_t>(p.M * p.N), -1.0f);
            const auto g = kernels::dense_gemm_args(p.ta, p.tb, p.M, p.N, p.K, A.data(), B.data(), C.data());
            std::int64_t taken = -1;
            parallel_run(1, [&](int) { taken = kernels::balanced::run(g, limit); });
            EXPECT_EQ(C, want) << p.str() << ", limit " << limit;
            if (limit == 0) EXPECT_EQ(taken, p.M) << p.str();
            else EXPECT_TRUE(taken > 0 && taken < p.M) << p.str() << ": " << taken << " rows taken over";
        }
    set_num_threads(before);
}

// Version 6 takes its own path below a million multiply-adds: check it on the shapes it
// was written for (SimpleNet's, N = 10 and K = 10), on the degenerate ones (M, N or K of
// 1, which BLAS callers hand over as vectors), on every tile-row and tile-width remainder,
// with all four transposes and padded rows.
TEST(GemmSmall, MatchesNaiveOnSkinnyShapesWithEveryTranspose) {
    const kernels::GemmKernel& small = kernels::find_gemm("small");
    const kernels::GemmKernel& naive = kernels::find_gemm("naive");
    const std::int64_t shapes[][3] = {{64, 10, 128}, {10, 128, 64}, {64, 128, 10}, {1, 10, 1},  {1, 1, 300},
                                      {7, 1, 5},     {9, 49, 1},    {17, 33, 3},   {8, 48, 16}, {15, 97, 31}};
    for (const auto& [M, N, K] : shapes)
        for (bool ta : {false, true})
            for (bool tb : {false, true})
                for (std::int64_t pad : {0, 3}) {
                    const GemmProblem p{M, N, K, ta, tb, pad};
                    const auto A = random_floats(p.a_elements(), 5);
                    const auto B = random_floats(p.b_elements(), 6);
                    std::string error;
                    const auto got = run_gemm(small, p, A, B, &error);
                    EXPECT_EQ(error, "");
                    const auto want = run_gemm(naive, p, A, B);
                    for (std::size_t i = 0; i < got.size(); ++i)
                        ASSERT_NEAR(got[i], want[i], 1e-4 * std::sqrt(static_cast<double>(K)) + 1e-6)
                            << p.str() << ", element " << i;
                }
}

// Version 7 runs version 6's tiles on column stripes between 2^20 and 2^25 multiply-adds:
// check it on SimpleNet's first-layer shapes, the CNN's fully connected layer's data
// gradient, and on odd ones in that range (stripe
// boundaries inside a tile, N not a multiple of 16, M not a multiple of 8), with all
// four transposes, padded rows, and 1, 2 and 3 threads.
TEST(GemmMedium, MatchesNaiveOnOddShapesWithEveryTransposeAndThreadCount) {
    const kernels::GemmKernel& medium = kernels::find_gemm("medium");
    const kernels::GemmKernel& naive = kernels::find_gemm("naive");
    const std::int64_t shapes[][3] = {{64, 128, 784}, {128, 784, 64}, {64, 3136, 128}, {61, 333, 97}, {257, 41, 150}, {9, 1001, 129}};
    const int before = get_num_threads();
    for (int threads : {1, 2, 3}) {
        set_num_threads(threads);
        for (const auto& [M, N, K] : shapes)
            for (bool ta : {false, true})
                for (bool tb : {false, true})
                    for (std::int64_t pad : {0, 3}) {
                        const GemmProblem p{M, N, K, ta, tb, pad};
                        const auto A = random_floats(p.a_elements(), 7);
                        const auto B = random_floats(p.b_elements(), 8);
                        std::string error;
                        const auto got = run_gemm(medium, p, A, B, &error);
                        EXPECT_EQ(error, "");
                        const auto want = run_gemm(naive, p, A, B);
                        for (std::size_t i = 0; i < got.size(); ++i)
                            ASSERT_NEAR(got[i], want[i], 1e-4 * std::sqrt(static_cast<double>(K)) + 1e-6)
                                << p.str() << ", " << threads << " threads, element " << i;
                    }
    }
    set_num_threads(before);
}

TEST(GemmMedium, SameBitsForAnyThreadCount) {
    // Each element of C is one tile's sum over k, in order, whichever stripe holds it.
    const GemmProblem p{64, 784, 128, true, false};
    const auto A = random_floats(static_cast<std::size_t>(p.M * p.K), 9);
    const auto B = random_floats(static_cast<std::size_t>(p.K * p.N), 10);
    const int before = get_num_threads();
    set_num_threads(1);
    const auto one = run_gemm(kernels::find_gemm("medium"), p, A, B);
    for (int n : {2, 3, 8}) {
        set_num_threads(n);
        EXPECT_EQ(run_gemm(kernels::find_gemm("medium"), p, A, B), one) << n << " threads";
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
    EXPECT_EQ(before, "medium") << "the fastest of our kernels at every shape is the default";
    EXPECT_THAT([] { kernels::find_gemm("nope"); },
                ::testing::ThrowsMessage<Error>(::testing::HasSubstr("known kernels: naive")));
}

}  // namespace
}  // namespace gl
