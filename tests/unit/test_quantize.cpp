// Q-1 numerics: affine INT8/UINT8 quantization (rounding, saturation, zero points, per
// channel), integer-only requantization against a float64 reference, the observers, and
// fake quantization with its straight-through backward.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "autograd/grad_mode.hpp"
#include "numerics/observer.hpp"
#include "numerics/quantize.hpp"
#include "ops/fake_quant.hpp"
#include "ops/ops.hpp"

namespace gl {
namespace {

using namespace gl::quant;

TEST(Quantize, RoundsHalfToEven) {
    const QParams unit{1.0f, 0};
    EXPECT_EQ(quantize_value(0.5f, unit, kInt8), 0);
    EXPECT_EQ(quantize_value(1.5f, unit, kInt8), 2);
    EXPECT_EQ(quantize_value(2.5f, unit, kInt8), 2);
    EXPECT_EQ(quantize_value(-0.5f, unit, kInt8), 0);
    EXPECT_EQ(quantize_value(-1.5f, unit, kInt8), -2);
    EXPECT_EQ(quantize_value(-2.5f, unit, kInt8), -2);
    EXPECT_EQ(quantize_value(2.5000002f, unit, kInt8), 3) << "just above a tie rounds up";
    // Ties in units of a scale that is a power of two are exact ties too.
    EXPECT_EQ(quantize_value(0.375f, {0.25f, 0}, kInt8), 2);   // 1.5 -> 2
    EXPECT_EQ(quantize_value(0.625f, {0.25f, 0}, kInt8), 2);   // 2.5 -> 2
}

TEST(Quantize, SaturatesInsteadOfWrapping) {
    const QParams p{0.1f, 0};
    EXPECT_EQ(quantize_value(1000.0f, p, kInt8), 127);
    EXPECT_EQ(quantize_value(-1000.0f, p, kInt8), -128);
    EXPECT_EQ(quantize_value(std::numeric_limits<float>::infinity(), p, kInt8), 127);
    EXPECT_EQ(quantize_value(-std::numeric_limits<float>::infinity(), p, kUint8), 0);
    // The zero point is added before clamping: 12.7 / 0.1 + 10 = 137 saturates at 127.
    EXPECT_EQ(quantize_value(12.7f, {0.1f, 10}, kInt8), 127);
    EXPECT_EQ(quantize_value(-1.0f, {0.1f, 10}, kUint8), 0);
}

TEST(Quantize, ZeroPointShiftsAndZeroIsExact) {
    const QParams p = choose_qparams(-1.0f, 3.0f, kUint8, QScheme::Asymmetric);
    EXPECT_NEAR(p.scale, 4.0 / 255.0, 1e-7);
    EXPECT_EQ(p.zero_point, 64);  // round(0 - (-1) / (4 / 255)) = round(63.75)
    EXPECT_EQ(dequantize_value(quantize_value(0.0f, p, kUint8), p), 0.0f);
    EXPECT_EQ(quantize_value(-1.0f, p, kUint8), 0);
    EXPECT_EQ(quantize_value(3.0f, p, kUint8), 255);
}

TEST(Quantize, RejectsNaN) {
    EXPECT_THROW(quantize_value(std::nanf(""), {1.0f, 0}, kInt8), Error);
    EXPECT_THROW(choose_qparams(std::nanf(""), 1.0f, kInt8, QScheme::Symmetric), Error);
    EXPECT_THROW(choose_qparams(2.0f, 1.0f, kInt8, QScheme::Symmetric), Error);
}

TEST(Quantize, ChooseQParams) {
    const QParams s = choose_qparams(-2.0f, 1.0f, kInt8, QScheme::Symmetric);
    EXPECT_EQ(s.zero_point, 0);
    EXPECT_FLOAT_EQ(s.scale, 2.0f / 127.5f);
    EXPECT_EQ(choose_qparams(-2.0f, 1.0f, kUint8, QScheme::Symmetric).zero_point, 128);
    // A range that does not contain 0 is widened to contain it.
    const QParams a = choose_qparams(2.0f, 4.0f, kUint8, QScheme::Asymmetric);
    EXPECT_EQ(a.zero_point, 0);
    EXPECT_FLOAT_EQ(a.scale, 4.0f / 255.0f);
    // A zero range gives a usable mapping of 0.
    const QParams z = choose_qparams(0.0f, 0.0f, kUint8, QScheme::Asymmetric);
    EXPECT_GT(z.scale, 0.0f);
    EXPECT_EQ(dequantize_value(quantize_value(0.0f, z, kUint8), z), 0.0f);
}

TEST(Quantize, RoundTripErrorIsAtMostHalfAStep) {
    std::mt19937 gen(1);
    std::uniform_real_distribution<float> u(-3.0f, 5.0f);
    std::vector<float> x(4096), back(x.size());
    for (auto& v : x) v = u(gen);
    const QParams p = choose_qparams(-3.0f, 5.0f, kUint8, QScheme::Asymmetric);
    std::vector<std::uint8_t> q(x.size());
    quantize(x.data(), x.size(), p, q.data());
    dequantize(q.data(), q.size(), p, back.data());
    for (std::size_t i = 0; i < x.size(); ++i) EXPECT_LE(std::abs(back[i] - x[i]), p.scale * 0.5001f) << x[i];
}

TEST(Quantize, PerChannelUsesEachRowsParameters) {
    const std::vector<float> w = {1.0f, -1.0f, 0.5f, 100.0f, -100.0f, 50.0f};  // 2 channels of 3
    const std::vector<QParams> p = {choose_qparams(-1.0f, 1.0f, kInt8, QScheme::Symmetric),
                                    choose_qparams(-100.0f, 100.0f, kInt8, QScheme::Symmetric)};
    std::vector<std::int8_t> q(6);
    quantize_per_channel(w.data(), 2, 3, p, q.data());
    EXPECT_EQ(q[0], 127);
    EXPECT_EQ(q[3], 127);
    EXPECT_EQ(q[2], 64);  // 0.5 / (1 / 127.5) = 63.75
    std::vector<float> back(6);
    dequantize_per_channel(q.data(), 2, 3, p, back.data());
    EXPECT_NEAR(back[5], 50.0f, 0.4f);
    // Per tensor, the small channel would share the large one's step and round to 0.
    const QParams t = choose_qparams(-100.0f, 100.0f, kInt8, QScheme::Symmetric);
    EXPECT_EQ(quantize_value(0.5f, t, kInt8), 1);
    EXPECT_THROW(quantize_per_channel(w.data(), 3, 2, p, q.data()), Error);
}

TEST(Requantize, FixedPointMultiplierIsClose) {
    for (double real : {1e-6, 0.000123, 0.0078125, 0.3, 0.5, 0.99999999, 1.0, 1.7, 300.0}) {
        const FixedPointMultiplier m = to_fixed_point(real);
        EXPECT_GE(m.multiplier, 1 << 30);
        EXPECT_NEAR(m.value() / real, 1.0, std::ldexp(1.0, -30)) << real;
    }
    EXPECT_THROW(to_fixed_point(0.0), Error);
    EXPECT_THROW(to_fixed_point(-1.0), Error);
    EXPECT_THROW(to_fixed_point(std::nan("")), Error);
}

// The integer-only path against a float64 reference: exact against the multiplier it
// stores, within one step of the real multiplier it approximates.
TEST(Requantize, MatchesFloat64Reference) {
    std::mt19937 gen(7);
    std::uniform_int_distribution<std::int32_t> acc(-(1 << 24), 1 << 24);
    std::uniform_real_distribution<double> mult(-14.0, 2.0);
    for (int trial = 0; trial < 20000; ++trial) {
        const double real = std::exp2(mult(gen));
        const FixedPointMultiplier m = to_fixed_point(real);
        const std::int32_t a = trial < 10 ? std::numeric_limits<std::int32_t>::min() + trial : acc(gen);
        const std::int32_t zp = trial % 256 - 128;
        auto ref = [&](double multiplier) {
            const double q = std::nearbyint(static_cast<double>(a) * multiplier) + zp;
            return static_cast<std::int32_t>(std::clamp(q, -128.0, 127.0));
        };
        const std::int32_t got = requantize(a, m, zp, kInt8);
        ASSERT_EQ(got, ref(m.value())) << "acc " << a << " multiplier " << real;
        ASSERT_LE(std::abs(got - ref(real)), 1);
    }
}

TEST(Requantize, TiesGoToEven) {
    const FixedPointMultiplier half = to_fixed_point(0.5);
    EXPECT_EQ(requantize(1, half, 0, kInt8), 0);   // 0.5 -> 0
    EXPECT_EQ(requantize(3, half, 0, kInt8), 2);   // 1.5 -> 2
    EXPECT_EQ(requantize(5, half, 0, kInt8), 2);   // 2.5 -> 2
    EXPECT_EQ(requantize(-3, half, 0, kInt8), -2);
    EXPECT_EQ(requantize(-5, half, 0, kInt8), -2);
    EXPECT_EQ(requantize(1000, half, 0, kInt8), 127);
    EXPECT_EQ(requantize(100, to_fixed_point(2.0), 0, kUint8), 200);
}

TEST(Observers, MinMaxPerTensorAndPerChannel) {
    const std::vector<float> a = {1, -2, 3, 0.5f, 10, -1};
    MinMaxObserver per_tensor(1), per_channel(2);
    per_tensor.observe(a.data(), 6);
    per_channel.observe(a.data(), 6);
    EXPECT_EQ(per_tensor.ranges(kInt8, QScheme::Symmetric)[0], (Range{-2, 10}));
    const auto r = per_channel.ranges(kInt8, QScheme::Symmetric);
    EXPECT_EQ(r[0], (Range{-2, 3}));
    EXPECT_EQ(r[1], (Range{-1, 10}));
    const std::vector<float> b = {-5, 0, 0, 0, 0, 0};  // widens channel 0 only
    per_channel.observe(b.data(), 6);
    EXPECT_EQ(per_channel.ranges(kInt8, QScheme::Symmetric)[0], (Range{-5, 3}));
    EXPECT_EQ(per_channel.ranges(kInt8, QScheme::Symmetric)[1], (Range{-1, 10}));
    EXPECT_THROW(per_channel.observe(a.data(), 5), Error);
    const std::vector<float> nan = {std::nanf(""), 0};
    EXPECT_THROW(per_tensor.observe(nan.data(), 2), Error);
    EXPECT_THROW(MinMaxObserver(1).ranges(kInt8, QScheme::Symmetric), Error);
}

TEST(Observers, MovingAverageMovesPartWay) {
    MovingAverageObserver o(1, 0.5f);
    const std::vector<float> a = {0, 4}, b = {0, 8};
    o.observe(a.data(), 2);
    o.observe(b.data(), 2);
    EXPECT_FLOAT_EQ(o.ranges(kUint8, QScheme::Asymmetric)[0].second, 6.0f);
}

TEST(Observers, PercentileAndMseClipOutliers) {
    std::mt19937 gen(3);
    std::normal_distribution<float> n(0.0f, 1.0f);
    std::vector<float> x(100000);
    for (auto& v : x) v = n(gen);
    x[17] = 1000.0f;  // one outlier
    MinMaxObserver mm(1);
    PercentileObserver pc(1, 99.9);
    MseObserver mse(1);
    for (Observer* o : std::initializer_list<Observer*>{&mm, &pc, &mse}) o->observe(x.data(), std::int64_t(x.size()));
    EXPECT_EQ(mm.ranges(kInt8, QScheme::Symmetric)[0].second, 1000.0f);
    const float p999 = pc.ranges(kInt8, QScheme::Symmetric)[0].second;
    EXPECT_NEAR(p999, 3.09f, 0.15f);  // the 99.9th percentile of a standard normal
    // One outlier in 10^5 costs less to keep than to clip (its clipping error would
    // dominate the mean), so the MSE observer keeps the whole range here...
    EXPECT_LE(quantization_mse(x, mse.qparams(kInt8, QScheme::Symmetric)[0], kInt8),
              quantization_mse(x, mm.qparams(kInt8, QScheme::Symmetric)[0], kInt8));
    // ... but on heavy-tailed data (Laplace) clipping the tails is worth its error.
    std::exponential_distribution<float> e(1.0f);
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = (i % 2 ? 1.0f : -1.0f) * e(gen);
    MinMaxObserver mm2(1);
    MseObserver mse2(1);
    mm2.observe(x.data(), std::int64_t(x.size()));
    mse2.observe(x.data(), std::int64_t(x.size()));
    EXPECT_LT(mse2.ranges(kInt8, QScheme::Symmetric)[0].second, mm2.ranges(kInt8, QScheme::Symmetric)[0].second);
    EXPECT_LT(quantization_mse(x, mse2.qparams(kInt8, QScheme::Symmetric)[0], kInt8),
              quantization_mse(x, mm2.qparams(kInt8, QScheme::Symmetric)[0], kInt8));
    EXPECT_THROW(make_observer("median", 1), Error);
    EXPECT_EQ(make_observer("percentile", 4)->channels(), 4);
}

TEST(FakeQuantize, ForwardIsTheRoundTripAndBackwardClips) {
    const QParams p{0.5f, 0};  // representable: [-64, 63.5]
    Tensor x = from_vector<float>({0.3f, 0.76f, 100.0f, -64.0f, -70.0f, 63.5f}, {6});
    x.set_requires_grad();
    Tensor y = fake_quantize(x, {p}, kInt8);
    const auto out = y.to_vector<float>();
    EXPECT_EQ(out, (std::vector<float>{0.5f, 1.0f, 63.5f, -64.0f, -64.0f, 63.5f}));
    sum(y).backward();
    EXPECT_EQ(x.grad().to_vector<float>(), (std::vector<float>{1, 1, 0, 1, 0, 1}))
        << "gradient passes inside the range (ends included) and is 0 where the input was clipped";
}

TEST(FakeQuantize, PerChannelBackwardUsesEachRowsRange) {
    const std::vector<QParams> p = {{0.01f, 0}, {1.0f, 0}};
    const auto dx = fake_quantize_backward({2.0f, 0.5f, 2.0f, 0.5f}, {1, 1, 1, 1}, p, kInt8);
    EXPECT_EQ(dx, (std::vector<float>{0, 1, 1, 1}));
    EXPECT_THROW(fake_quantize(from_vector<float>({1, 2, 3}, {3}), p, kInt8), Error);
    EXPECT_THROW(fake_quantize(from_vector<float>({std::nanf("")}, {1}), {QParams{}}, kInt8), Error);
}

}  // namespace
}  // namespace gl
