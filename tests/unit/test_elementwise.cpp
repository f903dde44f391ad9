// Unit tests: the bandwidth-bound kernels of kernels/cpu/elementwise.hpp against plain
// double-precision loops, on lengths that are not multiples of a vector or a grain.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <string>
#include <vector>

#include "base/error.hpp"
#include "base/rng.hpp"
#include "hw/probes.hpp"
#include "kernels/cpu/elementwise.hpp"
#include "parallel/thread_pool.hpp"

namespace gl {
namespace {

TEST(Elementwise, ExpApproxIsWithinAFewUlpOfExpOverTheWholeRange) {
    for (float x = -87.0f; x <= 88.0f; x += 0.01f) {
        const double want = std::exp(static_cast<double>(x));
        EXPECT_NEAR(kernels::exp_approx(x) / want, 1.0, 4e-7) << "x = " << x;
    }
    EXPECT_EQ(kernels::exp_approx(-100.0f), 0.0f) << "far below the normal range: zero, not e^-87";
    EXPECT_EQ(kernels::exp_approx(-88.0f), 0.0f);
}

TEST(Elementwise, LogSoftmaxRowsMatchesADoubleReferenceOnOddShapes) {
    Rng rng(3);
    const int before = get_num_threads();
    for (auto version : {kernels::SoftmaxVersion::best, kernels::SoftmaxVersion::portable})
    for (int threads : {1, 2})
        for (std::int64_t cols : {1, 10, 15, 16, 17, 31, 100, 1000, 1024})
            for (std::int64_t rows : {1, 3, 70}) {
                set_num_threads(threads);
                std::vector<float> x(static_cast<std::size_t>(rows * cols)), y(x.size());
                for (auto& v : x) v = static_cast<float>(-30.0 + 60.0 * rng.uniform());
                x[0] = 80.0f;  // a large logit: exp without subtracting the max would overflow
                kernels::log_softmax_rows(x.data(), y.data(), rows, cols, version);
                for (std::int64_t r = 0; r < rows; ++r) {
                    const float* in = x.data() + r * cols;
                    double m = in[0], total = 0.0;
                    for (std::int64_t c = 0; c < cols; ++c) m = std::max(m, static_cast<double>(in[c]));
                    for (std::int64_t c = 0; c < cols; ++c) total += std::exp(in[c] - m);
                    for (std::int64_t c = 0; c < cols; ++c) {
                        const double want = (in[c] - m) - std::log(total);
                        // (x - max) - log(total) in float: x - max and the result each carry
                        // a rounding of 2^-24 of their size, and log(total) exp_approx's few
                        // ulp of relative error (absolute: about 1e-6).
                        const double tolerance = 1.2e-7 * (std::abs(in[c] - m) + std::abs(want)) + 2e-6;
                        ASSERT_NEAR(y[static_cast<std::size_t>(r * cols + c)], want, tolerance)
                            << rows << " x " << cols << ", row " << r << ", column " << c << ", " << threads
                            << " threads, " << (version == kernels::SoftmaxVersion::best ? "best" : "portable")
                            << " version";
                    }
                }
            }
    set_num_threads(before);
}

TEST(Elementwise, LogSoftmaxVersionsAgreeBitForBitDownToTheUnderflow) {
    // The AVX-512 version (vscalefps) against the portable one's AVX-512 clone: the same n,
    // r and e^r, and zeros where exp(x - max) leaves the normal range. Rows whose values
    // sit within 100 of their maximum, stepped finely across -87.68 (where n goes from -126
    // to -127) and the clamp at -88, and rows holding -inf, -3e38, +inf and NaN.
    if (!kernels::log_softmax_uses_avx512()) GTEST_SKIP() << "this CPU has no AVX-512 F: there is one version";
#if defined(__SANITIZE_ADDRESS__)
    GTEST_SKIP() << "the sanitizer build compiles the portable version once, for baseline x86-64 (no FMA), so the "
                    "two versions need not round alike there; the release build compares them";
#endif
    const std::int64_t cols = 1000, rows = 6;
    std::vector<float> x(static_cast<std::size_t>(rows * cols));
    Rng rng(11);
    for (std::int64_t c = 0; c < cols; ++c) {
        x[static_cast<std::size_t>(c)] = static_cast<float>(-100.0 * rng.uniform());
        x[static_cast<std::size_t>(cols + c)] = -86.5f - 2.5f * static_cast<float>(c) / cols;  // across n = -126
        x[static_cast<std::size_t>(2 * cols + c)] = static_cast<float>(1e4 * rng.uniform());
    }
    x[static_cast<std::size_t>(cols)] = 0.0f;  // row 1's maximum: its values run from -86.5 to -89
    x[static_cast<std::size_t>(3 * cols + 5)] = -INFINITY;
    x[static_cast<std::size_t>(3 * cols + 6)] = -3e38f;  // n far below -126, r and e^r far out of range
    x[static_cast<std::size_t>(4 * cols + 7)] = INFINITY;
    x[static_cast<std::size_t>(5 * cols + 9)] = NAN;
    std::vector<float> best(x.size()), portable(x.size());
    kernels::log_softmax_rows(x.data(), best.data(), rows, cols, kernels::SoftmaxVersion::best);
    kernels::log_softmax_rows(x.data(), portable.data(), rows, cols, kernels::SoftmaxVersion::portable);
    for (std::size_t i = 0; i < x.size(); ++i) {
        const bool both_nan = std::isnan(best[i]) && std::isnan(portable[i]);
        ASSERT_TRUE(both_nan || std::bit_cast<std::uint32_t>(best[i]) == std::bit_cast<std::uint32_t>(portable[i]))
            << "row " << i / cols << ", column " << i % cols << ": x = " << x[i] << ", AVX-512 " << best[i]
            << ", portable " << portable[i];
    }
    EXPECT_TRUE(std::isnan(best[static_cast<std::size_t>(5 * cols)])) << "a NaN logit makes its row NaN";
    EXPECT_EQ(best[static_cast<std::size_t>(3 * cols + 5)], -INFINITY) << "log of probability 0";
}

TEST(Elementwise, ChannelBiasAndDoubleSumsOnOddLengths) {
    // The convolution's bias kernels: a plane of every length from 1 to 40 (one vector,
    // several, a ragged end), on 1 and 2 threads, against plain loops. The sum is exact
    // here: small integers in float add up exactly in double, in any order.
    Rng rng(5);
    const int before = get_num_threads();
    for (int threads : {1, 2})
        for (std::int64_t plane = 1; plane <= 40; ++plane) {
            set_num_threads(threads);
            const std::int64_t batch = 3, channels = 5;
            std::vector<float> y(static_cast<std::size_t>(batch * channels * plane)), bias(channels);
            for (auto& v : y) v = static_cast<float>(std::floor(200.0 * rng.uniform()) - 100.0);
            for (auto& v : bias) v = static_cast<float>(std::floor(20.0 * rng.uniform()) - 10.0);
            std::vector<float> want = y;
            for (std::int64_t i = 0; i < static_cast<std::int64_t>(want.size()); ++i)
                want[static_cast<std::size_t>(i)] += bias[static_cast<std::size_t>(i / plane % channels)];
            kernels::add_channel_bias(y.data(), bias.data(), batch, channels, plane);
            ASSERT_EQ(y, want) << "plane " << plane << ", " << threads << " threads";
            double sum = 0.0;
            for (std::int64_t i = 0; i < plane; ++i) sum += y[static_cast<std::size_t>(i)];
            ASSERT_EQ(kernels::sum_in_double(y.data(), plane), sum) << "plane " << plane;
        }
    set_num_threads(before);
}

// The streaming-store triad (hw/probes.hpp) writes its first element normally when it is
// not 16-byte aligned and its last when the range is odd: every such case, and nothing
// written outside [lo, hi).
TEST(Probes, NontemporalTriadMatchesTheTriadOnEveryAlignmentAndLength) {
    Rng rng(5);
    constexpr std::int64_t n = 40;
    for (std::int64_t lo = 0; lo < 4; ++lo)
        for (std::int64_t hi = lo; hi <= n; ++hi) {
            std::vector<double> a(n, -7.0), b(n), c(n);
            for (std::int64_t i = 0; i < n; ++i) b[i] = rng.uniform(-1, 1), c[i] = rng.uniform(-1, 1);
            std::vector<double> want = a;
            hw::triad(want.data(), b.data(), c.data(), 2.5, lo, hi);
            hw::triad_nontemporal(a.data(), b.data(), c.data(), 2.5, lo, hi);
            ASSERT_EQ(a, want) << "range [" << lo << ", " << hi << ")";
        }
}

// A pattern's byte counts: STREAM counts an updated array twice and a written one once;
// memory also reads each written array once before overwriting it (write-allocate).
TEST(Probes, StreamPatternCountsWhatStreamCountsAndWhatMemoryMoves) {
    const hw::StreamPattern triad{2, 0, 1}, axpy{1, 1, 0}, adam{1, 3, 0};
    EXPECT_EQ(triad.counted(), 3);
    EXPECT_EQ(triad.moved(), 4);
    EXPECT_EQ(axpy.counted(), 3);
    EXPECT_EQ(axpy.moved(), 3);
    EXPECT_EQ(adam.counted(), 7);
    EXPECT_EQ(adam.moved(), 7);
    EXPECT_EQ(hw::to_string(axpy), "read 1, update 1");
    EXPECT_EQ(hw::to_string(triad), "read 2, write 1");
}

// The loops over the caller's float arrays (MEM-1 times them beside each kernel call, over
// the kernel's own arrays): each pattern writes 1 + the sum of what it reads and adds 1e-3
// of that to what it updates, pass after pass, and counts its bytes as STREAM does; a
// pattern without a loop is refused with a message naming where to add it, and so is the
// wrong number of arrays.
TEST(Probes, StreamLoopRunsEachPatternOverTheCallersArrays) {
    const std::int64_t n = 1000;
    for (const auto& p : hw::stream_patterns()) {
        const int count = p.read + p.updated + p.written;
        std::vector<std::vector<float>> arrays(static_cast<std::size_t>(count), std::vector<float>(n, 0.0f));
        std::vector<float*> pointers;
        for (int k = 0; k < count; ++k) {
            std::fill(arrays[static_cast<std::size_t>(k)].begin(), arrays[static_cast<std::size_t>(k)].end(),
                      k < p.read ? 2.0f : 0.0f);
            pointers.push_back(arrays[static_cast<std::size_t>(k)].data());
        }
        const hw::StreamLoop loop(p, pointers, n, 2);
        EXPECT_EQ(loop.counted_bytes(), static_cast<double>(p.counted() * n * 4)) << hw::to_string(p);
        for (int pass = 0; pass < 3; ++pass) EXPECT_GT(loop.pass_gbs(), 0.0) << hw::to_string(p);
        const float sum = 1.0f + 2.0f * static_cast<float>(p.read);
        for (int k = p.read; k < count; ++k)
            for (std::int64_t i : {std::int64_t{0}, n / 2, n - 1}) {
                const float want = k < p.read + p.updated ? 3 * (1e-3f * sum) : sum;
                EXPECT_NEAR(arrays[static_cast<std::size_t>(k)][static_cast<std::size_t>(i)], want, 1e-6f)
                    << hw::to_string(p) << ", array " << k << ", element " << i;
            }
    }
    std::vector<float> x(10);
    try {
        hw::StreamLoop({3, 3, 3}, {x.data()}, 10, 1);
        FAIL() << "a pattern without a loop was accepted";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("pattern_loops()"), std::string::npos) << e.what();
    }
    EXPECT_THROW(hw::StreamLoop({1, 0, 1}, {x.data()}, 10, 1), Error) << "one array for read 1, write 1";
}

}  // namespace
}  // namespace gl
