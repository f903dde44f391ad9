// Lab 04 contract tests: the probes' deterministic parts over their whole contract. The triad loop
// on random ranges of canary-guarded arrays (a write outside [lo, hi) fails even in a release
// build); the FMA probe's flop count on every width, both precisions and 1..4 threads, from the
// iterations it reports (no timing is judged); the roofline at random points and exactly at the
// ridge. The student's code is called only through graded::student (graded.hpp), each call one
// small lambda that returns everything the checks read, so a checker that never loads it can
// decide.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "contract.hpp"
#include "graded.hpp"
#include "hw/probes.hpp"
#include "parallel/thread_pool.hpp"

namespace gl {
namespace {

TEST(Lab04, ContractTriad) {
    Rng rng(41);
    for (int trial = 0; trial < 60; ++trial) {
        const std::int64_t n = labs::pick(rng, 1, 3000);
        const std::int64_t lo = labs::pick(rng, 0, n - 1), hi = labs::pick(rng, lo, n);
        const double s = trial % 3 == 0 ? 3.0 : rng.uniform(-4, 4);
        labs::Guarded<double> a(static_cast<std::size_t>(n)), b(a.size()), c(a.size());
        for (std::size_t i = 0; i < a.size(); ++i) {
            a[i] = -7.0;  // must survive outside [lo, hi)
            b[i] = rng.uniform(-1, 1);
            c[i] = rng.uniform(-1, 1);
        }
        auto run = [&]() -> std::vector<double> {
            hw::triad(a.data(), b.data(), c.data(), s, lo, hi);
            return a.all();
        };
        const std::vector<double> got = graded::student<std::vector<double>>("triad", run);
        const std::string where = "triad on [" + std::to_string(lo) + ", " + std::to_string(hi) + ") of " +
                                  std::to_string(n) + " elements, s = " + std::to_string(s);
        ASSERT_EQ(labs::guard_damage(got, a.guard()), "") << where;
        for (std::int64_t i = 0; i < n; ++i) {
            const double value = got[a.guard() + static_cast<std::size_t>(i)];
            if (i < lo || i >= hi) {
                ASSERT_EQ(value, -7.0) << where << ": wrote a[" << i << "], outside the range (another thread's)";
                continue;
            }
            const double want = b[static_cast<std::size_t>(i)] + s * c[static_cast<std::size_t>(i)];
            ASSERT_NEAR(value, want, 1e-15 * (std::abs(want) + 1)) << where << ": a[" << i << "] should be b + s c";
        }
    }
}

int lanes(hw::VectorWidth w, bool fp64) {
    const int bits = w == hw::VectorWidth::Bits128 ? 128 : w == hw::VectorWidth::Bits256 ? 256 : 512;
    return bits / (fp64 ? 64 : 32);
}

TEST(Lab04, ContractFmaFlops) {
    if (hw::fma_widths().empty()) GTEST_SKIP() << "this CPU has no FMA";
    const int before = get_num_threads();
    for (int threads = 1; threads <= 4; threads *= 2) {
        set_num_threads(threads);
        for (const auto w : hw::fma_widths())
            for (bool fp64 : {false, true}) {
                auto run = [&]() -> std::vector<double> {
                    const hw::PeakResult r = hw::fma_peak(w, fp64, threads, 0.004);
                    return {r.gflops, r.seconds, static_cast<double>(r.iterations), static_cast<double>(r.threads)};
                };
                const std::vector<double> r = graded::student<std::vector<double>>("fma_peak", run);
                const std::string where = hw::to_string(w) + (fp64 ? " FP64" : " FP32") + " FMA peak on " +
                                          std::to_string(threads) + " thread(s)";
                ASSERT_EQ(r[3], std::min(threads, get_num_threads())) << where << ": threads reported";
                const double flops = 2.0 * r[2] * hw::kFmaChains * lanes(w, fp64) * r[3];
                EXPECT_NEAR(r[0] * r[1] * 1e9, flops, 1e-9 * flops)
                    << where << ": GFLOP/s x seconds must be 2 flops x lanes x chains x iterations x threads ("
                    << r[2] << " iterations of " << hw::kFmaChains << " chains, " << lanes(w, fp64) << " lanes)";
            }
    }
    set_num_threads(before);
}

TEST(Lab04, ContractRoofline) {
    Rng rng(43);
    for (int trial = 0; trial < 200; ++trial) {
        const double peak = rng.uniform(1, 5000), bw = rng.uniform(1, 500);
        const double ridge_want = peak / bw;
        const double intensity = trial % 4 == 0 ? ridge_want : std::exp(rng.uniform(-6, 8));
        auto run = [&]() -> std::vector<double> {
            return {hw::ridge_point(peak, bw), hw::roofline_gflops(intensity, peak, bw),
                    hw::memory_bound(intensity, peak, bw) ? 1.0 : 0.0};
        };
        const std::vector<double> got = graded::student<std::vector<double>>("roofline", run);
        const std::string where = "peak " + std::to_string(peak) + " GFLOP/s, " + std::to_string(bw) +
                                  " GB/s, intensity " + std::to_string(intensity);
        EXPECT_DOUBLE_EQ(got[0], ridge_want) << where << ": the ridge point";
        EXPECT_DOUBLE_EQ(got[1], std::min(peak, bw * intensity)) << where << ": attainable GFLOP/s";
        EXPECT_EQ(got[2], intensity < ridge_want ? 1.0 : 0.0)
            << where << ": memory-bound only left of the ridge (at the ridge both roofs meet: not memory-bound)";
    }
}

}  // namespace
}  // namespace gl
