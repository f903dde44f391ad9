// Lab 12 graded tests: quantize/dequantize (rounding, zero points, saturation, NaN), the
// per-channel min/max observer, the fake-quantize backward (straight-through estimator
// with clipping), and a QAT run from scratch that must reach the accuracy band.
// Points per test are in labs/12-quantization/rubric.json. Nothing is timed.
//
// The student's code is called only inside graded::student (graded.hpp); every expected
// value is computed here, in the test body, from the definitions (never by the student's
// functions), so the checker decides without loading the student's code.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "graded.hpp"
#include "numerics/observer.hpp"
#include "numerics/quantize.hpp"
#include "ops/fake_quant.hpp"
#include "quant/qat.hpp"
#include "training/toy_models.hpp"
#include "training/trainer.hpp"

namespace gl {
namespace {

using namespace gl::quant;

struct Case {
    float x;
    float scale;
    std::int32_t zero_point;
    QRange range;
};

// The definition, in double: clamp(nearest-even(x / scale) + zp).
std::int32_t expected_q(const Case& c) {
    double q = std::nearbyint(static_cast<double>(c.x) / c.scale) + c.zero_point;
    if (std::isinf(c.x)) q = c.x > 0 ? c.range.qmax : c.range.qmin;
    return static_cast<std::int32_t>(std::min<double>(std::max<double>(q, c.range.qmin), c.range.qmax));
}

std::vector<std::int32_t> student_quantize(const std::string& key, const std::vector<Case>& cases) {
    return graded::student<std::vector<std::int32_t>>(key, [&] {
        std::vector<std::int32_t> out;
        for (const Case& c : cases) out.push_back(quantize_value(c.x, {c.scale, c.zero_point}, c.range));
        return out;
    });
}

void expect_cases(const std::vector<Case>& cases, const std::vector<std::int32_t>& got, const std::string& what) {
    ASSERT_EQ(got.size(), cases.size());
    for (std::size_t i = 0; i < cases.size(); ++i)
        EXPECT_EQ(got[i], expected_q(cases[i])) << what << ": quantize_value(" << cases[i].x << ", scale "
                                                << cases[i].scale << ", zero point " << cases[i].zero_point << ", ["
                                                << cases[i].range.qmin << ", " << cases[i].range.qmax << "])";
}

// ---- Task 1: quantize and dequantize ---------------------------------------------------

TEST(Lab12, QuantizeRoundsTiesToEven) {
    std::vector<Case> cases;
    for (float t : {0.5f, 1.5f, 2.5f, 3.5f, -0.5f, -1.5f, -2.5f, 126.5f, -127.5f})
        cases.push_back({t, 1.0f, 0, kInt8});
    for (float t : {0.125f, 0.375f, 0.625f, -0.375f}) cases.push_back({t, 0.25f, 0, kInt8});  // exact ties in quarters
    cases.push_back({2.5000002f, 1.0f, 0, kInt8});
    expect_cases(cases, student_quantize("ties", cases), "ties go to the even integer (2.5 -> 2, 3.5 -> 4)");
}

TEST(Lab12, QuantizeAddsTheZeroPointThenSaturates) {
    const float inf = std::numeric_limits<float>::infinity();
    const std::vector<Case> cases = {
        {0.0f, 0.1f, 10, kUint8},     {-1.0f, 0.1f, 10, kUint8},  {-2.0f, 0.1f, 10, kUint8},
        {12.7f, 0.1f, 10, kInt8},     {1000.0f, 0.1f, 0, kInt8},  {-1000.0f, 0.1f, 0, kInt8},
        {inf, 0.5f, 3, kUint8},       {-inf, 0.5f, 3, kUint8},    {3.0f, 4.0f / 255.0f, 64, kUint8},
        {-1.0f, 4.0f / 255.0f, 64, kUint8}, {0.3f, 0.02f, -128, kInt8}, {5.1f, 0.02f, -128, kInt8},
        {1e30f, 1e-3f, 0, kInt8},     {0.7f, 0.1f, 0, {-7, 7}}};
    expect_cases(cases, student_quantize("zero_point", cases),
                 "add the zero point, then clamp to the range (values beyond saturate, they never wrap)");
}

TEST(Lab12, QuantizeRejectsNaN) {
    // 0: returned a value, 1: threw gl::Error, 2: threw "not implemented". A working
    // quantize_value first: a stub that throws for everything refuses NaN by accident.
    const auto got = graded::student<std::vector<std::int32_t>>("nan", [] {
        std::vector<std::int32_t> out = {quantize_value(1.0f, {0.1f, 0}, kInt8)};
        for (float x : {std::numeric_limits<float>::quiet_NaN(), -std::numeric_limits<float>::quiet_NaN()}) {
            try {
                quantize_value(x, {0.1f, 0}, kInt8);
                out.push_back(0);
            } catch (const NotImplemented&) {
                out.push_back(2);
            } catch (const Error&) {
                out.push_back(1);
            }
        }
        return out;
    });
    EXPECT_EQ(got, (std::vector<std::int32_t>{10, 1, 1}))
        << "quantize_value(1.0, scale 0.1) must be 10, and a NaN input must throw gl::Error (it has no nearest integer)";
}

TEST(Lab12, DequantizeIsScaleTimesOffset) {
    const std::vector<std::pair<std::int32_t, QParams>> cases = {
        {0, {0.5f, 0}}, {127, {0.5f, 0}}, {-128, {0.5f, 0}}, {64, {4.0f / 255.0f, 64}}, {0, {4.0f / 255.0f, 64}},
        {255, {0.01f, 128}}, {-3, {1e-4f, -100}}};
    const auto got = graded::student<std::vector<float>>("dequantize", [&] {
        std::vector<float> out;
        for (const auto& [q, p] : cases) out.push_back(dequantize_value(q, p));
        return out;
    });
    ASSERT_EQ(got.size(), cases.size());
    for (std::size_t i = 0; i < cases.size(); ++i) {
        const auto& [q, p] = cases[i];
        EXPECT_FLOAT_EQ(got[i], p.scale * static_cast<float>(q - p.zero_point))
            << "dequantize_value(" << q << ", scale " << p.scale << ", zero point " << p.zero_point << ")";
    }
}

TEST(Lab12, RoundTripOfRandomValues) {
    Rng rng(12);
    std::vector<Case> cases;
    for (int i = 0; i < 4000; ++i) {
        const float scale = static_cast<float>(std::exp2(rng.uniform(-12.0, 2.0)));
        const std::int32_t zp = static_cast<std::int32_t>(rng.uniform(0.0, 256.0));
        cases.push_back({static_cast<float>(rng.uniform(-300.0, 300.0)) * scale, scale, zp, kUint8});
    }
    expect_cases(cases, student_quantize("random", cases), "random values");
}

// ---- Task 2: the per-channel min/max observer ------------------------------------------

using Ranges = std::vector<std::pair<float, float>>;

TEST(Lab12, ObserverTracksEachChannelsMinAndMax) {
    // Three batches of [4 channels, 5 values]; channel 3 is all zeros (a zero range).
    const std::vector<std::vector<float>> batches = {
        {1, 2, 3, 4, 5, -1, -2, -3, -4, -5, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0, 0, 0, 0, 0},
        {9, 0, 0, 0, 0, 0, 0, 0, 0, -9, 0.5f, 0.25f, 0.75f, 0.5f, 0.5f, 0, 0, 0, 0, 0},
        {-7, 1, 1, 1, 1, 2, 2, 2, 2, 2, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0, 0, 0, 0, 0}};
    const auto got = graded::student<std::vector<Ranges>>("observer", [&] {
        MinMaxObserver o(4);
        std::vector<Ranges> after_each;
        for (const auto& b : batches) {
            o.observe(b.data(), static_cast<std::int64_t>(b.size()));
            after_each.push_back(o.ranges(kInt8, QScheme::Symmetric));
        }
        return after_each;
    });
    const std::vector<Ranges> want = {{{1, 5}, {-5, -1}, {0.5f, 0.5f}, {0, 0}},
                                      {{0, 9}, {-9, 0}, {0.25f, 0.75f}, {0, 0}},
                                      {{-7, 9}, {-9, 2}, {0.25f, 0.75f}, {0, 0}}};
    ASSERT_EQ(got.size(), want.size());
    for (std::size_t b = 0; b < want.size(); ++b)
        EXPECT_EQ(got[b], want[b]) << "after batch " << b + 1
                                   << ": row c of the batch is channel c; the first batch sets each channel's "
                                      "range, later ones only widen it";
}

TEST(Lab12, ObserverRejectsNaNAndKeepsItsRange) {
    const auto got = graded::student<std::pair<std::int32_t, Ranges>>("observer_nan", [] {
        MinMaxObserver o(2);
        const std::vector<float> good = {1, 2, 3, 4}, bad = {100, std::nanf(""), -100, 0};
        o.observe(good.data(), 4);
        std::int32_t threw = 0;
        try {
            o.observe(bad.data(), 4);
        } catch (const Error&) {
            threw = 1;
        }
        return std::pair<std::int32_t, Ranges>(threw, o.ranges(kInt8, QScheme::Symmetric));
    });
    EXPECT_EQ(got.first, 1) << "a batch with a NaN must throw gl::Error";
    EXPECT_EQ(got.second, (Ranges{{1, 2}, {3, 4}})) << "a refused batch must leave every channel's range as it was";
}

// ---- Task 3: the straight-through estimator with clipping ------------------------------

TEST(Lab12, FakeQuantBackwardPassesInsideAndBlocksOutside) {
    const std::vector<QParams> params = {{0.5f, 0}, {0.1f, -28}, {1.0f, 127}};  // 3 channels of 6
    const std::vector<float> x = {0.0f, 63.5f, -64.0f, 63.6f, -64.1f, 1e9f,     // [-64, 63.5]
                                  0.0f, 15.5f, -10.0f, 15.6f, -10.1f, 3.0f,     // [-10, 15.5]
                                  -255.0f, 0.0f, -256.0f, 0.5f, 1.0f, -100.0f};  // [-255, 0]
    std::vector<float> grad(x.size());
    for (std::size_t i = 0; i < grad.size(); ++i) grad[i] = 0.25f * static_cast<float>(i + 1);
    const auto dx = graded::student<std::vector<float>>("ste", [&] {
        return fake_quantize_backward(x, grad, params, kInt8);
    });
    ASSERT_EQ(dx.size(), x.size());
    for (std::size_t i = 0; i < x.size(); ++i) {
        const QParams p = params[i / 6];
        const float lo = p.scale * static_cast<float>(kInt8.qmin - p.zero_point);
        const float hi = p.scale * static_cast<float>(kInt8.qmax - p.zero_point);
        const float want = x[i] >= lo && x[i] <= hi ? grad[i] : 0.0f;
        EXPECT_EQ(dx[i], want) << "x = " << x[i] << " in channel " << i / 6 << " (range [" << lo << ", " << hi
                               << "]): the gradient passes inside the range, ends included, and is 0 outside";
    }
}

// ---- Task 4: QAT from scratch reaches the band -----------------------------------------

// A SimpleNet-shaped MLP trained only with fake quantization on XOR data (no float
// pretraining: without the STE's gradient nothing would learn). The student's run
// returns the trained weights; the checker converts them with its own PTQ and measures
// INT8 accuracy itself.
TEST(Lab12, QatTrainsToTheAccuracyBand) {
    const auto data_blobs = training::make_xor(1024, 5);
    auto data = std::make_shared<TensorDataset>(data_blobs.x, data_blobs.y, 2);
    const auto weights = graded::student<std::vector<std::vector<float>>>("qat", [&] {
        Rng rng(3);
        auto net = nn::make_simple_net(rng, 2, 32, 2);
        auto qat = prepare_qat(*net, true);
        training::FitOptions fit;
        fit.epochs = 12;
        fit.batch_size = 32;
        fit.lr = 1e-2;
        training::fit(*qat, data, nullptr, fit);
        std::vector<std::vector<float>> w;
        for (const Tensor& p : net->parameters()) w.push_back(p.to_vector<float>());
        return w;
    });
    Rng rng(3);
    auto net = nn::make_simple_net(rng, 2, 32, 2);
    const auto params = net->parameters();
    ASSERT_EQ(weights.size(), params.size());
    for (std::size_t i = 0; i < params.size(); ++i) {
        ASSERT_EQ(static_cast<std::int64_t>(weights[i].size()), params[i].numel());
        std::copy(weights[i].begin(), weights[i].end(), params[i].data<float>());
    }
    PtqOptions o;
    o.calibration = 1024;
    const double int8 = quantize_mlp(*net, *data, o).accuracy(*data);
    EXPECT_GE(int8, 0.90) << "after QAT the INT8 model classifies XOR at " << int8
                          << "; with a working straight-through estimator it reaches >= 0.90";
}

}  // namespace
}  // namespace gl
