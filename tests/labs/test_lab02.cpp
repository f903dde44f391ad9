// Lab 02 graded tests: the CPU GEMM family, one idea per version. Points per test are in
// labs/02-cpu-gemm/rubric.json. Every version is checked against the naive i-j-k loop on
// shapes that are not multiples of any block, with all four transposes; the *Speed tests
// time your kernel against the reference in the same run (see lab_timing.hpp).
//
// The student's code is called only inside graded::student (graded.hpp): the grader
// records its results in a sandbox and checks them in this program built from the
// reference; the speed tests run only there, timing the student's program from outside.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "graded.hpp"
#include "kernels/cpu/sgemm/packed.hpp"
#include "lab_timing.hpp"

namespace gl {
namespace {

using kernels::GemmArgs;
using kernels::packed::Isa;

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

GemmArgs<float> args(const Problem& p, const std::vector<float>& A, const std::vector<float>& B, std::vector<float>& C) {
    return {p.ta, p.tb, p.M, p.N, p.K, A.data(), std::max<std::int64_t>(p.ta ? p.M : p.K, 1),
            B.data(), std::max<std::int64_t>(p.tb ? p.K : p.N, 1), C.data(), std::max<std::int64_t>(p.N, 1)};
}

std::vector<Problem> odd_problems() {
    std::vector<Problem> ps{{1, 1, 1, false, false}, {7, 5, 3, false, false}, {33, 17, 65, false, false},
                            {5, 129, 3, true, true}, {3, 4, 0, false, false}};
    for (bool ta : {false, true})
        for (bool tb : {false, true}) ps.push_back({203, 97, 417, ta, tb});  // crosses MC and KC blocks
    return ps;
}

// Checks @p kernel against the naive loop on every odd problem; a message says which failed.
void expect_matches_naive(const std::string& kernel, const std::string& label) {
    for (const Problem& p : odd_problems()) {
        const auto A = random_vector(static_cast<std::size_t>(p.M * p.K), 1);
        const auto B = random_vector(static_cast<std::size_t>(p.K * p.N), 2);
        std::vector<float> want(static_cast<std::size_t>(p.M * p.N));
        kernels::find_gemm("naive").sgemm(args(p, A, B, want));
        const auto got = graded::student<std::vector<float>>(label, [&] {
            std::vector<float> c(want.size(), -7.0f);
            kernels::find_gemm(kernel).sgemm(args(p, A, B, c));
            return c;
        });
        ASSERT_EQ(got.size(), want.size()) << label << ": C has the wrong size";
        for (std::size_t i = 0; i < got.size(); ++i)
            ASSERT_NEAR(got[i], want[i], 1e-4 * std::sqrt(static_cast<double>(p.K)) + 1e-6)
                << label << ": wrong C[" << i / static_cast<std::size_t>(p.N) << ", " << i % static_cast<std::size_t>(p.N)
                << "] for M=" << p.M << " N=" << p.N << " K=" << p.K << " trans_a=" << p.ta << " trans_b=" << p.tb;
    }
}

// Speed of the registry kernel @p kernel on an n^3 problem against the reference's.
void grade_kernel_speed(const std::string& kernel, std::int64_t n, int threads) {
    labs::GemmCase c{kernel, "auto", n, n, n, false, false, threads, 30};  // the long chain: 32 products
    labs::grade_speed(kernel + " at N=" + std::to_string(n) + " on " + std::to_string(threads) + " thread(s)", c);
}

// ---- Task 1: loop order ------------------------------------------------------------------

TEST(Lab02, ReorderedMatchesNaive) { expect_matches_naive("reordered", "reordered (i-k-j)"); }

TEST(Lab02, ReorderedSpeed) {
    expect_matches_naive("reordered", "reordered (i-k-j)");
    grade_kernel_speed("reordered", 256, 1);
}

// ---- Task 2: cache blocking --------------------------------------------------------------

TEST(Lab02, BlockedMatchesNaive) { expect_matches_naive("blocked", "blocked"); }

TEST(Lab02, BlockedSpeed) {
    expect_matches_naive("blocked", "blocked");
    grade_kernel_speed("blocked", 384, 1);
}

// ---- Task 3: packing ---------------------------------------------------------------------

TEST(Lab02, PackALaysOutMrRowSlivers) {
    for (bool ta : {false, true}) {
        const Problem p{23, 1, 19, ta, false};
        const auto A = random_vector(static_cast<std::size_t>(p.M * p.K), 3);
        std::vector<float> C;
        const GemmArgs<float> g = args(p, A, A, C);
        const int mr = 6;
        const std::int64_t i0 = 2, mc = 17, p0 = 3, kc = 11;  // a block inside A, ragged at the end
        const std::int64_t slivers = (mc + mr - 1) / mr;
        const auto got = graded::student<std::vector<float>>("pack_a", [&] {
            std::vector<float> packed(static_cast<std::size_t>(slivers * mr * kc), -7.0f);
            kernels::packed::pack_a(g, i0, mc, p0, kc, mr, packed.data());
            return packed;
        });
        ASSERT_EQ(got.size(), static_cast<std::size_t>(slivers * mr * kc));
        for (std::int64_t s = 0; s < slivers; ++s)
            for (std::int64_t k = 0; k < kc; ++k)
                for (int r = 0; r < mr; ++r) {
                    const std::int64_t i = i0 + s * mr + r;
                    const float want = i < i0 + mc ? (ta ? A[(p0 + k) * p.M + i] : A[i * p.K + p0 + k]) : 0.0f;
                    ASSERT_EQ(got[static_cast<std::size_t>((s * kc + k) * mr + r)], want)
                        << "pack_a (trans_a=" << ta << "): sliver " << s << ", k " << k << ", row " << r
                        << " (rows past the block must be 0)";
                }
    }
}

TEST(Lab02, PackBLaysOutNrColumnSlivers) {
    for (bool tb : {false, true}) {
        const Problem p{1, 37, 21, false, tb};
        const auto B = random_vector(static_cast<std::size_t>(p.K * p.N), 4);
        std::vector<float> C;
        const GemmArgs<float> g = args(p, B, B, C);
        const int nr = 16;
        const std::int64_t p0 = 4, kc = 13, j0 = 3, nc = 33;
        const std::int64_t slivers = (nc + nr - 1) / nr;
        const auto got = graded::student<std::vector<float>>("pack_b", [&] {
            std::vector<float> packed(static_cast<std::size_t>(slivers * nr * kc), -7.0f);
            kernels::packed::pack_b(g, p0, kc, j0, nc, nr, packed.data());
            return packed;
        });
        ASSERT_EQ(got.size(), static_cast<std::size_t>(slivers * nr * kc));
        for (std::int64_t s = 0; s < slivers; ++s)
            for (std::int64_t k = 0; k < kc; ++k)
                for (int c = 0; c < nr; ++c) {
                    const std::int64_t j = j0 + s * nr + c;
                    const float want = j < j0 + nc ? (tb ? B[j * p.K + p0 + k] : B[(p0 + k) * p.N + j]) : 0.0f;
                    ASSERT_EQ(got[static_cast<std::size_t>((s * kc + k) * nr + c)], want)
                        << "pack_b (trans_b=" << tb << "): sliver " << s << ", k " << k << ", column " << c
                        << " (columns past the panel must be 0)";
                }
    }
}

// ---- Task 4: the SIMD micro-kernels ------------------------------------------------------

void expect_micro_kernel_right(Isa isa) {
    const auto isas = kernels::packed::supported_isas();
    if (std::find(isas.begin(), isas.end(), isa) == isas.end())
        GTEST_SKIP() << "this CPU has no " << kernels::packed::to_string(isa);
    const auto& mk = kernels::packed::micro_kernel(isa);
    const std::int64_t kc = 37, ldc = mk.nr + 5;
    std::vector<float> a = random_vector(static_cast<std::size_t>(mk.mr * kc), 5);
    // The panel's values do not depend on where the aligned copy starts: the grader's
    // checker must see the inputs the student's process saw.
    const std::vector<float> b_values = random_vector(static_cast<std::size_t>(mk.nr * kc), 6);
    std::vector<float> b_raw(b_values.size() + 16);
    float* b = b_raw.data();
    while (reinterpret_cast<std::uintptr_t>(b) % 64) ++b;  // packed panels are 64-byte aligned
    std::copy(b_values.begin(), b_values.end(), b);
    for (bool accumulate : {false, true}) {
        const auto c = graded::student<std::vector<float>>("micro-kernel", [&] {
            std::vector<float> tile(static_cast<std::size_t>(mk.mr * ldc), 0.5f);
            mk.run(kc, a.data(), b, tile.data(), ldc, accumulate);
            return tile;
        });
        ASSERT_EQ(c.size(), static_cast<std::size_t>(mk.mr * ldc));
        for (int i = 0; i < mk.mr; ++i)
            for (std::int64_t j = 0; j < ldc; ++j) {
                double want = j < mk.nr && accumulate ? 0.5 : (j < mk.nr ? 0.0 : 0.5);
                if (j < mk.nr)
                    for (std::int64_t k = 0; k < kc; ++k) want += static_cast<double>(a[k * mk.mr + i]) * b_values[static_cast<std::size_t>(k * mk.nr + j)];
                ASSERT_NEAR(c[static_cast<std::size_t>(i * ldc + j)], want, 1e-4)
                    << kernels::packed::to_string(isa) << " micro-kernel, accumulate=" << accumulate << ", C(" << i
                    << ", " << j << ")" << (j >= mk.nr ? ": it wrote outside its tile" : "");
            }
    }
}

TEST(Lab02, MicroKernelAvx2) { expect_micro_kernel_right(Isa::Avx2); }
TEST(Lab02, MicroKernelAvx512) { expect_micro_kernel_right(Isa::Avx512); }

// ---- Task 5: the loops around the micro-kernel ---------------------------------------------

TEST(Lab02, PackedSimdMatchesNaiveOnEveryIsa) {
    for (const auto isa : kernels::packed::supported_isas()) {
        kernels::packed::force_isa(isa);
        expect_matches_naive("packed_simd", "packed_simd with the " + kernels::packed::to_string(isa) + " micro-kernel");
    }
    kernels::packed::force_isa(std::nullopt);
}

TEST(Lab02, PackedSimdSpeed) {
    expect_matches_naive("packed_simd", "packed_simd");
    grade_kernel_speed("packed_simd", 512, 1);
}

// ---- Task 6: threads -----------------------------------------------------------------------

TEST(Lab02, ThreadedMatchesNaiveOnAnyThreadCount) {
    const int before = get_num_threads();
    for (int n : {1, 2, 3}) {
        set_num_threads(n);
        expect_matches_naive("threaded", "threaded on " + std::to_string(n) + " threads");
    }
    set_num_threads(before);
}

TEST(Lab02, ThreadedSpeed) {
    expect_matches_naive("threaded", "threaded");
    grade_kernel_speed("threaded", 768, 2);
}

}  // namespace
}  // namespace gl
