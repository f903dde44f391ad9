// Lab 04 graded tests: the probes behind the roofline and the latency ladder. Points per
// test are in labs/04-roofline/rubric.json. A probe is graded on sanity against the
// reference probe measured in the same run (lab_reference), with generous bands: a shared
// machine moves these numbers by tens of percent, a wrong probe by factors.
//
// The student's code is called only inside graded::student (graded.hpp) and, for the
// comparisons with the reference, as the student build's lab_student, which the grader's
// checker starts in the sandbox. A probe's result is a measurement the student's code
// reports about itself: the checker can compare it with the reference's, not verify it.
#include <gtest/gtest.h>

#include "hw/probes.hpp"
#include "graded.hpp"
#include "lab_timing.hpp"

namespace gl {
namespace {

// Student (lab_student) and reference (lab_reference) alternate on the measurement
// @p args, three rounds, best of each; the ratio must be in [1/band, band]. A ratio out of
// the band is measured for three more rounds (best of all six) before it counts: a burst
// of load from outside the test can hold one side below its best for a whole round of
// three (seen: a triad at 21 GB/s beside 49), where a wrong probe stays off by a factor.
void expect_close_to_reference(const std::string& what, const std::string& args, bool higher_is_better,
                               double band) {
    if (!labs::timing_meaningful()) GTEST_SKIP() << what << ": measurement skipped in an unoptimized or sanitized build";
    if (!graded::trusted()) GTEST_SKIP() << what << ": measured by the grader, beside the reference";
    double m = higher_is_better ? 0.0 : 1e30, r = m;
    const auto in_band = [&] { return m > r / band && m < r * band; };
    for (int round = 0; round < 6 && (round < 3 || !in_band()); ++round) {
        const double a = labs::run_student(args), b = labs::run_reference(args);
        m = higher_is_better ? std::max(m, a) : std::min(m, a);
        r = higher_is_better ? std::max(r, b) : std::min(r, b);
    }
    std::printf("%s: yours %.3g, reference %.3g\n", what.c_str(), m, r);
    EXPECT_GT(m, r / band) << what << ": yours " << m << ", the reference " << r << " in the same run";
    EXPECT_LT(m, r * band) << what << ": yours " << m << ", the reference " << r << " in the same run";
}

TEST(Lab04, TriadComputesTheTriad) {
    const auto [gbs, bytes] = graded::student<std::pair<double, std::int64_t>>("triad", [] {
        const hw::StreamResult s = hw::stream_triad(1 << 20, 1, 1);  // checks a = b + s c inside
        return std::pair<double, std::int64_t>{s.gbs, s.bytes};
    });
    EXPECT_GT(gbs, 0.0);
    EXPECT_EQ(bytes, 3 * (1 << 20)) << "a triad moves three arrays";
}

TEST(Lab04, TriadBandwidthMatchesTheReference) {
    const int threads = std::min(2, get_num_threads());
    expect_close_to_reference("STREAM triad GB/s (64 MiB arrays)",
                              "triad " + std::to_string(64 << 20) + " " + std::to_string(threads), true, 2.0);
}

TEST(Lab04, FmaPeakMatchesTheReference) {
    const auto widths = hw::fma_widths();
    if (std::find(widths.begin(), widths.end(), hw::VectorWidth::Bits256) == widths.end())
        GTEST_SKIP() << "this CPU has no 256-bit FMA";
    expect_close_to_reference("256-bit FP32 FMA peak, GFLOP/s, 1 thread", "fma 256 0 1", true, 1.5);
}

TEST(Lab04, FmaPeakCountsFlopsPerLane) {
    // The same loop body on half the lanes must give about half the GFLOP/s: the flop
    // count follows the vector width (a deterministic check would need cycle counters).
    if (!labs::timing_meaningful()) GTEST_SKIP() << "measurement skipped in an unoptimized or sanitized build";
    const auto widths = hw::fma_widths();
    if (widths.size() < 2) GTEST_SKIP() << "this CPU has no FMA";
    const auto [f32, f64] = graded::student<std::pair<double, double>>("fma peaks", [] {
        double fp32 = 0, fp64 = 0;
        for (int i = 0; i < 3; ++i) {
            fp32 = std::max(fp32, hw::fma_peak(hw::VectorWidth::Bits256, false, 1, 0.05).gflops);
            fp64 = std::max(fp64, hw::fma_peak(hw::VectorWidth::Bits256, true, 1, 0.05).gflops);
        }
        return std::pair{fp32, fp64};
    });
    EXPECT_NEAR(f32 / f64, 2.0, 0.6) << "FP32 " << f32 << " vs FP64 " << f64
                                     << " GFLOP/s: 8 float lanes against 4 double lanes per 256-bit FMA";
}

TEST(Lab04, PointerChaseSeesTheCacheAndMemory) {
    if (!labs::timing_meaningful()) GTEST_SKIP() << "measurement skipped in an unoptimized or sanitized build";
    const auto [small, large] = graded::student<std::pair<double, double>>("chase", [] {
        return std::pair{hw::pointer_chase_ns(16 << 10, 300'000), hw::pointer_chase_ns(64 << 20, 300'000)};
    });
    EXPECT_GT(large, 5 * small) << "16 KiB (in L1): " << small << " ns per load, 64 MiB (beyond the caches): " << large
                                << " ns: is every load waiting for the one before it?";
    expect_close_to_reference("pointer chase, 64 MiB, ns per load", "chase " + std::to_string(64 << 20) + " 300000",
                              false, 2.0);
}

TEST(Lab04, RooflineClassifiesKernels) {
    const double peak = 100.0, bw = 20.0;  // GFLOP/s, GB/s: ridge at 5 flop/byte
    const auto [ridge, relu, gemm] = graded::student<std::tuple<double, double, double>>("roofline", [&] {
        return std::tuple{hw::ridge_point(peak, bw), hw::roofline_gflops(1.0 / 8, peak, bw),
                          hw::roofline_gflops(85.3, peak, bw)};
    });
    const auto bound = graded::student<std::vector<bool>>("memory_bound", [&] {
        return std::vector<bool>{hw::memory_bound(1.0 / 8, peak, bw), hw::memory_bound(0.5, peak, bw),
                                 hw::memory_bound(85.3, peak, bw)};
    });
    EXPECT_DOUBLE_EQ(ridge, 5.0);
    EXPECT_DOUBLE_EQ(relu, 2.5) << "relu: 1 flop per 8 bytes";
    EXPECT_DOUBLE_EQ(gemm, 100.0) << "GEMM N=1024: 2N^3 flops over 12 N^2 bytes";
    ASSERT_EQ(bound.size(), 3u);
    EXPECT_TRUE(bound[0]) << "relu is memory-bound";
    EXPECT_TRUE(bound[1]) << "Adam (14 flops per 28 bytes) is memory-bound";
    EXPECT_FALSE(bound[2]) << "GEMM N=1024 is compute-bound";
}

}  // namespace
}  // namespace gl
