// Lab 02 contract tests: each graded function over its whole contract, randomized. Operands with
// leading dimensions larger than their width (padding between rows), transposed operands with
// padding, sizes above every blocking constant (NB = 256 of the blocked loop; MC, KC, NC of every
// micro-kernel's blocking) and odd remainders, 1..4 threads, a C holding NaN before an overwrite.
// Every buffer sits between canary guard zones and every matrix's padding holds canaries, so a
// write past a row, a stripe or a buffer fails here even in a release build. The student's code is
// called only through graded::student (graded.hpp), each call one small lambda that returns
// everything the checks read, so a checker that never loads it can decide.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "contract.hpp"
#include "graded.hpp"
#include "kernels/cpu/sgemm/packed.hpp"
#include "kernels/gemm.hpp"
#include "parallel/thread_pool.hpp"

namespace gl {
namespace {

using kernels::GemmArgs;
using kernels::packed::Isa;
using labs::Guarded;

struct Case {
    std::int64_t M, N, K;
    bool ta, tb;
    std::int64_t pad_a, pad_b, pad_c;  // extra elements after each stored row
};

std::string describe(const Case& c) {
    return "M=" + std::to_string(c.M) + " N=" + std::to_string(c.N) + " K=" + std::to_string(c.K) +
           " trans_a=" + std::to_string(c.ta) + " trans_b=" + std::to_string(c.tb) + " lda pad " +
           std::to_string(c.pad_a) + ", ldb pad " + std::to_string(c.pad_b) + ", ldc pad " + std::to_string(c.pad_c);
}

// A stored matrix: rows x cols elements, row stride ld >= cols; padding holds canaries.
struct Stored {
    std::int64_t rows, cols, ld;
    Guarded<float> buf;
    Stored(std::int64_t r, std::int64_t c, std::int64_t pad)
        : rows(r), cols(c), ld(std::max<std::int64_t>(c + pad, 1)), buf(static_cast<std::size_t>(r * ld)) {}
    float& at(std::int64_t i, std::int64_t j) { return buf[static_cast<std::size_t>(i * ld + j)]; }
};

Stored random_stored(std::int64_t rows, std::int64_t cols, std::int64_t pad, Rng& rng) {
    Stored s(rows, cols, pad);
    for (std::int64_t i = 0; i < rows; ++i)
        for (std::int64_t j = 0; j < cols; ++j) s.at(i, j) = static_cast<float>(rng.uniform(-1, 1));
    return s;
}

struct Operands {
    Stored A, B, C;
    GemmArgs<float> args() {
        return {case_.ta, case_.tb, case_.M, case_.N, case_.K, A.buf.data(), A.ld, B.buf.data(), B.ld, C.buf.data(), C.ld};
    }
    Case case_;
};

// Random operands for @p c; C's elements hold quiet NaNs, which an overwrite must ignore.
Operands operands(const Case& c, std::uint64_t seed) {
    Rng rng(seed);
    Stored A = c.ta ? random_stored(c.K, c.M, c.pad_a, rng) : random_stored(c.M, c.K, c.pad_a, rng);
    Stored B = c.tb ? random_stored(c.N, c.K, c.pad_b, rng) : random_stored(c.K, c.N, c.pad_b, rng);
    Stored C(c.M, c.N, c.pad_c);
    for (std::int64_t i = 0; i < c.M; ++i)
        for (std::int64_t j = 0; j < c.N; ++j) C.at(i, j) = std::numeric_limits<float>::quiet_NaN();
    return {std::move(A), std::move(B), std::move(C), c};
}

// Random small cases (every transpose, padded leading dimensions, odd sizes) and the cases
// above each blocking constant: NB = 256, MB = 64, KB = 128 of the blocked loop; MC (96,
// 128, 192), KC (256, 384, 1024) and NC (2048, 4096) of the packed kernels.
std::vector<Case> contract_cases(std::uint64_t seed) {
    Rng rng(seed);
    std::vector<Case> cases{{1, 1, 1, false, false, 0, 0, 0}, {3, 5, 0, true, false, 2, 1, 3},
                            {97, 261, 131, false, true, 3, 5, 7}, {70, 300, 140, true, false, 1, 0, 2},
                            {200, 37, 1030, false, false, 2, 3, 1}, {203, 29, 1100, true, true, 5, 1, 4},
                            {7, 4100, 5, false, false, 1, 2, 3}, {5, 4097, 3, true, true, 0, 3, 1}};
    for (int i = 0; i < 8; ++i)
        cases.push_back({labs::pick(rng, 1, 70), labs::pick(rng, 1, 70), labs::pick(rng, 1, 70), rng.below(2) == 1,
                         rng.below(2) == 1, labs::pick(rng, 0, 9), labs::pick(rng, 0, 9), labs::pick(rng, 0, 9)});
    return cases;
}

// C as op(A) op(B) says, in double; NaN where C is padding.
std::vector<double> expected_c(Operands& o) {
    const Case& c = o.case_;
    std::vector<double> want(static_cast<std::size_t>(c.M * o.C.ld), std::nan(""));
    for (std::int64_t i = 0; i < c.M; ++i)
        for (std::int64_t j = 0; j < c.N; ++j) {
            double sum = 0;
            for (std::int64_t k = 0; k < c.K; ++k)
                sum += static_cast<double>(c.ta ? o.A.at(k, i) : o.A.at(i, k)) * (c.tb ? o.B.at(j, k) : o.B.at(k, j));
            want[static_cast<std::size_t>(i * o.C.ld + j)] = sum;
        }
    return want;
}

// Checks C (returned with its guard zones) against op(A) op(B): every element, padding
// untouched, guard zones intact.
void expect_right_c(const std::vector<float>& all, std::size_t guard, Operands& o, const std::string& label) {
    ASSERT_EQ(labs::guard_damage(all, guard), "") << label << ": " << describe(o.case_);
    const std::vector<double> want = expected_c(o);
    const double tolerance = 1e-4 * std::sqrt(static_cast<double>(o.case_.K)) + 1e-5;
    for (std::size_t e = 0; e < want.size(); ++e) {
        const float got = all[guard + e];
        const auto i = static_cast<std::int64_t>(e) / o.C.ld, j = static_cast<std::int64_t>(e) % o.C.ld;
        if (j >= o.case_.N) {
            ASSERT_TRUE(labs::is_canary(got)) << label << ": wrote C's padding at row " << i << ", column " << j
                                              << " (past the row's N columns): " << describe(o.case_);
            continue;
        }
        ASSERT_NEAR(got, want[e], tolerance) << label << ": wrong C(" << i << ", " << j << ") for " << describe(o.case_)
                                             << (std::isnan(got) ? " (NaN: was C's old content read?)" : "");
    }
}

// Runs registry kernel @p kernel on every contract case.
void expect_kernel_keeps_contract(const std::string& kernel, const std::string& label, std::uint64_t seed) {
    std::uint64_t n = 0;
    for (const Case& c : contract_cases(seed)) {
        Operands o = operands(c, seed + ++n);
        // The student's code runs here: it returns C with its guard zones.
        auto run = [&]() -> std::vector<float> {
            kernels::find_gemm(kernel).sgemm(o.args());
            return o.C.buf.all();
        };
        expect_right_c(graded::student<std::vector<float>>(label, run), o.C.buf.guard(), o, label);
        if (::testing::Test::HasFatalFailure()) return;
    }
}

TEST(Lab02, ContractReordered) { expect_kernel_keeps_contract("reordered", "reordered (i-k-j)", 100); }

TEST(Lab02, ContractBlocked) { expect_kernel_keeps_contract("blocked", "blocked", 200); }

TEST(Lab02, ContractPackedSimd) {
    for (const auto isa : kernels::packed::supported_isas()) {
        kernels::packed::force_isa(isa);
        expect_kernel_keeps_contract("packed_simd", "packed_simd, " + kernels::packed::to_string(isa), 300);
        if (::testing::Test::HasFatalFailure()) break;
    }
    kernels::packed::force_isa(std::nullopt);
}

TEST(Lab02, ContractThreaded) {
    const int before = get_num_threads();
    for (int threads = 1; threads <= 4; ++threads) {
        set_num_threads(threads);
        expect_kernel_keeps_contract("threaded", "threaded on " + std::to_string(threads) + " threads", 400);
        if (::testing::Test::HasFatalFailure()) break;
    }
    set_num_threads(before);
}

// ---- packing -----------------------------------------------------------------------------

TEST(Lab02, ContractPackA) {
    Rng rng(500);
    for (int trial = 0; trial < 40; ++trial) {
        const bool ta = trial % 2 == 1;
        const int mr = std::array{4, 6, 12}[trial % 3];
        const Case c{labs::pick(rng, 1, 60), 1, labs::pick(rng, 1, 60), ta, false, labs::pick(rng, 1, 7), 0, 0};
        Operands o = operands(c, 600 + static_cast<std::uint64_t>(trial));
        const std::int64_t i0 = labs::pick(rng, 0, c.M - 1), mc = labs::pick(rng, 1, c.M - i0);
        const std::int64_t p0 = labs::pick(rng, 0, c.K - 1), kc = labs::pick(rng, 1, c.K - p0);
        const std::int64_t slivers = (mc + mr - 1) / mr;
        Guarded<float> dst(static_cast<std::size_t>(slivers * mr * kc));
        auto run = [&]() -> std::vector<float> {
            kernels::packed::pack_a(o.args(), i0, mc, p0, kc, mr, dst.data());
            return dst.all();
        };
        const std::vector<float> got = graded::student<std::vector<float>>("pack_a", run);
        const std::string where = "pack_a(i0=" + std::to_string(i0) + ", mc=" + std::to_string(mc) + ", p0=" +
                                  std::to_string(p0) + ", kc=" + std::to_string(kc) + ", mr=" + std::to_string(mr) +
                                  ") of A " + describe(c);
        ASSERT_EQ(labs::guard_damage(got, dst.guard()), "") << where;
        for (std::int64_t s = 0; s < slivers; ++s)
            for (std::int64_t k = 0; k < kc; ++k)
                for (int r = 0; r < mr; ++r) {
                    const std::int64_t i = i0 + s * mr + r;
                    const float want = i < i0 + mc ? (ta ? o.A.at(p0 + k, i) : o.A.at(i, p0 + k)) : 0.0f;
                    ASSERT_EQ(got[dst.guard() + static_cast<std::size_t>((s * kc + k) * mr + r)], want)
                        << where << ": sliver " << s << ", k " << k << ", row " << r;
                }
    }
}

TEST(Lab02, ContractPackB) {
    Rng rng(700);
    for (int trial = 0; trial < 40; ++trial) {
        const bool tb = trial % 2 == 1;
        const int nr = trial % 4 < 2 ? 16 : 32;
        const Case c{1, labs::pick(rng, 1, 80), labs::pick(rng, 1, 50), false, tb, 0, labs::pick(rng, 1, 7), 0};
        Operands o = operands(c, 800 + static_cast<std::uint64_t>(trial));
        const std::int64_t j0 = labs::pick(rng, 0, c.N - 1), nc = labs::pick(rng, 1, c.N - j0);
        const std::int64_t p0 = labs::pick(rng, 0, c.K - 1), kc = labs::pick(rng, 1, c.K - p0);
        const std::int64_t slivers = (nc + nr - 1) / nr;
        Guarded<float> dst(static_cast<std::size_t>(slivers * nr * kc));
        auto run = [&]() -> std::vector<float> {
            kernels::packed::pack_b(o.args(), p0, kc, j0, nc, nr, dst.data());
            return dst.all();
        };
        const std::vector<float> got = graded::student<std::vector<float>>("pack_b", run);
        const std::string where = "pack_b(p0=" + std::to_string(p0) + ", kc=" + std::to_string(kc) + ", j0=" +
                                  std::to_string(j0) + ", nc=" + std::to_string(nc) + ", nr=" + std::to_string(nr) +
                                  ") of B " + describe(c);
        ASSERT_EQ(labs::guard_damage(got, dst.guard()), "") << where;
        for (std::int64_t s = 0; s < slivers; ++s)
            for (std::int64_t k = 0; k < kc; ++k)
                for (int col = 0; col < nr; ++col) {
                    const std::int64_t j = j0 + s * nr + col;
                    const float want = j < j0 + nc ? (tb ? o.B.at(j, p0 + k) : o.B.at(p0 + k, j)) : 0.0f;
                    ASSERT_EQ(got[dst.guard() + static_cast<std::size_t>((s * kc + k) * nr + col)], want)
                        << where << ": sliver " << s << ", k " << k << ", column " << col;
                }
    }
}

// ---- the micro-kernels ---------------------------------------------------------------------

// One micro-kernel on a tile inside a padded C whose padding holds canaries; when
// overwriting, the tile holds NaN and infinities first, which must not survive.
void expect_micro_kernel_keeps_contract(Isa isa) {
    const auto isas = kernels::packed::supported_isas();
    if (std::find(isas.begin(), isas.end(), isa) == isas.end())
        GTEST_SKIP() << "this CPU has no " << kernels::packed::to_string(isa);
    const auto& mk = kernels::packed::micro_kernel(isa);
    Rng rng(900 + static_cast<std::uint64_t>(isa));
    for (int trial = 0; trial < 12; ++trial) {
        const std::int64_t kc = std::array<std::int64_t, 4>{1, 7, 64, 1030}[trial % 4];
        const std::int64_t ldc = mk.nr + labs::pick(rng, 0, 9);
        const bool accumulate = trial % 2 == 1;
        std::vector<float> a(static_cast<std::size_t>(mk.mr * kc));
        for (auto& x : a) x = static_cast<float>(rng.uniform(-1, 1));
        std::vector<float> b_raw(static_cast<std::size_t>(mk.nr * kc + 16));
        float* b = b_raw.data();
        while (reinterpret_cast<std::uintptr_t>(b) % 64) ++b;  // packed panels are 64-byte aligned
        for (std::int64_t e = 0; e < mk.nr * kc; ++e) b[e] = static_cast<float>(rng.uniform(-1, 1));
        Guarded<float> c(static_cast<std::size_t>(mk.mr * ldc));
        std::vector<double> old(c.size());
        for (int i = 0; i < mk.mr; ++i)
            for (int j = 0; j < mk.nr; ++j) {
                const auto e = static_cast<std::size_t>(i * ldc + j);
                const float special = (i + j) % 2 ? std::numeric_limits<float>::quiet_NaN() : -INFINITY;
                c[e] = accumulate ? static_cast<float>(rng.uniform(-1, 1)) : special;
                old[e] = c[e];
            }
        auto run = [&]() -> std::vector<float> {
            mk.run(kc, a.data(), b, c.data(), ldc, accumulate);
            return c.all();
        };
        const std::vector<float> got =
            graded::student<std::vector<float>>(kernels::packed::to_string(isa) + " micro-kernel", run);
        const std::string where = kernels::packed::to_string(isa) + " micro-kernel, kc=" + std::to_string(kc) +
                                  ", ldc=" + std::to_string(ldc) + ", accumulate=" + std::to_string(accumulate);
        ASSERT_EQ(labs::guard_damage(got, c.guard()), "") << where;
        for (int i = 0; i < mk.mr; ++i)
            for (std::int64_t j = 0; j < ldc; ++j) {
                const float value = got[c.guard() + static_cast<std::size_t>(i * ldc + j)];
                if (j >= mk.nr) {
                    ASSERT_TRUE(labs::is_canary(value)) << where << ": wrote C(" << i << ", " << j << "), outside its tile";
                    continue;
                }
                double want = accumulate ? old[static_cast<std::size_t>(i * ldc + j)] : 0.0;
                for (std::int64_t k = 0; k < kc; ++k) want += static_cast<double>(a[k * mk.mr + i]) * b[k * mk.nr + j];
                ASSERT_NEAR(value, want, 1e-4 * std::sqrt(static_cast<double>(kc)) + 1e-5)
                    << where << ": C(" << i << ", " << j << ")"
                    << (accumulate ? "" : " (it held NaN or -inf before: an overwrite must not read it)");
            }
    }
}

TEST(Lab02, ContractMicroKernelAvx2) { expect_micro_kernel_keeps_contract(Isa::Avx2); }
TEST(Lab02, ContractMicroKernelAvx512) { expect_micro_kernel_keeps_contract(Isa::Avx512); }

}  // namespace
}  // namespace gl
