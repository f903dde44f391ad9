// Lab 05 graded tests: float <-> half conversion, the dynamic loss scaler and the
// master-weight update. Points per test are in labs/05-mixed-precision/rubric.json.
// The conversions are checked against Eigen's half (an independent implementation) on
// every 16-bit pattern and on random floats, and against the CPU's F16C where it has it.
#include <gtest/gtest.h>

#include <Eigen/Core>
#include <bit>
#include <cmath>
#include <limits>
#include <random>

#include "amp/loss_scaler.hpp"
#include "amp/master_weights.hpp"
#include "data/mnist.hpp"
#include "numerics/convert.hpp"
#include "numerics/half.hpp"
#include "training/trainer.hpp"

namespace gl {
namespace {

std::uint32_t bits_of(float f) { return std::bit_cast<std::uint32_t>(f); }
std::uint16_t eigen_half_bits(float f) { return Eigen::numext::bit_cast<std::uint16_t>(Eigen::half(f)); }
float eigen_half_value(std::uint16_t h) { return static_cast<float>(Eigen::numext::bit_cast<Eigen::half>(h)); }

std::string hex(std::uint32_t v) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "0x%x", v);
    return buf;
}

// ---- Task 1: half -> float ------------------------------------------------------------

TEST(Lab05, HalfToFloatOnEveryPattern) {
    int wrong = 0;
    for (std::uint32_t i = 0; i < 65536; ++i) {
        const auto h = static_cast<std::uint16_t>(i);
        const float got = half_bits_to_float(h);
        const float want = eigen_half_value(h);
        if (std::isnan(want)) {
            EXPECT_TRUE(std::isnan(got)) << "half " << hex(h) << " is a NaN; you returned " << got;
            EXPECT_TRUE(bits_of(got) & 0x00400000u) << "half " << hex(h) << ": return a quiet NaN (set the top mantissa bit)";
            continue;
        }
        if (bits_of(got) != bits_of(want) && ++wrong <= 5)
            ADD_FAILURE() << "half " << hex(h) << " is " << want << " (float bits " << hex(bits_of(want)) << "), you returned "
                          << got << " (" << hex(bits_of(got)) << ")"
                          << ((h & 0x7C00) == 0 && (h & 0x3FF) ? ": a subnormal, 0.m * 2^-14" : "");
    }
    EXPECT_EQ(wrong, 0) << wrong << " of 65536 patterns wrong";
}

// ---- Task 2: float -> half ------------------------------------------------------------

TEST(Lab05, HalfFromFloatRoundTripsEveryPattern) {
    int wrong = 0;
    for (std::uint32_t i = 0; i < 65536; ++i) {
        const auto h = static_cast<std::uint16_t>(i);
        const float f = eigen_half_value(h);
        if (std::isnan(f)) continue;  // checked in HalfFromFloatSpecialValues
        const std::uint16_t got = float_to_half_bits(f);
        if (got != h && ++wrong <= 5) ADD_FAILURE() << f << " is exactly half " << hex(h) << "; you returned " << hex(got);
    }
    EXPECT_EQ(wrong, 0) << wrong << " of 63488 non-NaN patterns do not survive float -> half";
}

TEST(Lab05, HalfFromFloatRoundsToNearestEven) {
    // Every midpoint between two neighbouring halves must go to the even one.
    int wrong = 0;
    for (std::uint32_t h = 0; h < 0x7BFF; ++h) {
        const float lo = eigen_half_value(static_cast<std::uint16_t>(h));
        const float hi = eigen_half_value(static_cast<std::uint16_t>(h + 1));
        const float mid = lo + (hi - lo) / 2;
        const std::uint16_t got = float_to_half_bits(mid), want = eigen_half_bits(mid);
        if (got != want && ++wrong <= 5)
            ADD_FAILURE() << mid << " lies exactly between halves " << hex(h) << " and " << hex(h + 1) << ": round to the even one, "
                          << hex(want) << "; you returned " << hex(got);
    }
    EXPECT_EQ(wrong, 0);
    std::mt19937 gen(5);
    std::uniform_int_distribution<std::uint32_t> any;
    std::uniform_real_distribution<float> exponent(-28.0f, 17.0f);
    for (int i = 0; i < 200000; ++i) {
        const float f = i % 2 ? std::bit_cast<float>(any(gen)) : std::exp2(exponent(gen)) * (i % 4 ? 1 : -1);
        if (std::isnan(f)) continue;
        ASSERT_EQ(float_to_half_bits(f), eigen_half_bits(f)) << "float " << f << " (bits " << hex(bits_of(f)) << ")";
    }
}

TEST(Lab05, HalfFromFloatSubnormalsAndOverflow) {
    EXPECT_EQ(float_to_half_bits(std::exp2(-24.0f)), 0x0001) << "2^-24 is the smallest subnormal half";
    EXPECT_EQ(float_to_half_bits(std::exp2(-25.0f)), 0x0000) << "2^-25 is halfway to 0: ties to even give 0";
    EXPECT_EQ(float_to_half_bits(1.5f * std::exp2(-25.0f)), 0x0001);
    EXPECT_EQ(float_to_half_bits(-1023.5f * std::exp2(-24.0f)), 0x8400) << "rounds up into the smallest normal";
    EXPECT_EQ(float_to_half_bits(1e-30f), 0x0000);
    EXPECT_EQ(float_to_half_bits(-0.0f), 0x8000) << "keep the sign of zero";
    EXPECT_EQ(float_to_half_bits(65519.0f), 0x7BFF);
    EXPECT_EQ(float_to_half_bits(65520.0f), 0x7C00) << "65520 is halfway past 65504: ties to even give infinity";
    EXPECT_EQ(float_to_half_bits(1e10f), 0x7C00);
    EXPECT_EQ(float_to_half_bits(-std::numeric_limits<float>::infinity()), 0xFC00);
}

TEST(Lab05, HalfFromFloatSpecialValues) {
    const std::uint16_t q = float_to_half_bits(std::numeric_limits<float>::quiet_NaN());
    EXPECT_TRUE((q & 0x7C00) == 0x7C00 && (q & 0x3FF)) << "NaN must stay NaN, got " << hex(q);
    const std::uint16_t s = float_to_half_bits(std::bit_cast<float>(0xFF800001u));
    EXPECT_TRUE((s & 0x7C00) == 0x7C00 && (s & 0x200) && (s & 0x8000))
        << "a signalling NaN with a payload only in low bits must still be a NaN (quiet, sign kept), got " << hex(s);
    if (numerics::available(numerics::ConvertPath::F16C)) {
        std::vector<float> f = {std::bit_cast<float>(0x7FA00000u), std::bit_cast<float>(0xFFC12345u)};
        std::vector<std::uint16_t> hw(2);
        numerics::float_to_half(f.data(), hw.data(), 2, numerics::ConvertPath::F16C);
        for (std::size_t i = 0; i < f.size(); ++i)
            EXPECT_EQ(float_to_half_bits(f[i]), hw[i]) << "NaN payloads: keep the top 9 payload bits, as F16C does";
    }
}

// ---- Task 3: the loss scaler ----------------------------------------------------------

TEST(Lab05, LossScalerUnscalesAndDetectsOverflow) {
    const amp::DynamicLossScaler scaler;  // scale 65536
    Tensor a = from_vector<float>({65536.0f, -32768.0f, 0.0f}, {3});
    Tensor b = from_vector<float>({131072.0f}, {1});
    EXPECT_FALSE(scaler.unscale_({a, Tensor(), b})) << "finite gradients: no overflow";
    EXPECT_EQ(a.to_vector<float>(), (std::vector<float>{1.0f, -0.5f, 0.0f})) << "divide every gradient by the scale";
    EXPECT_EQ(b.to_vector<float>(), (std::vector<float>{2.0f}));
    Tensor c = from_vector<float>({1.0f, std::numeric_limits<float>::infinity()}, {2});
    Tensor d = from_vector<float>({std::numeric_limits<float>::quiet_NaN(), 1.0f}, {2});
    EXPECT_TRUE(scaler.unscale_({c})) << "an inf gradient must be reported";
    EXPECT_TRUE(scaler.unscale_({a, d})) << "a NaN gradient must be reported";
}

// A script: for each step, whether its gradients overflow; the expected scale after it.
void run_script(const amp::LossScalerOptions& o, const std::vector<bool>& overflow, const std::vector<double>& scales,
                const std::string& what) {
    amp::DynamicLossScaler s(o);
    std::int64_t skipped = 0;
    for (std::size_t i = 0; i < overflow.size(); ++i) {
        s.update(overflow[i]);
        skipped += overflow[i];
        ASSERT_EQ(s.scale_value(), scales[i]) << what << ": wrong scale after step " << i + 1 << " ("
                                              << (overflow[i] ? "overflow" : "finite") << ")";
    }
    EXPECT_EQ(s.state().skipped_steps, skipped) << what << ": count every skipped (overflow) step";
}

TEST(Lab05, LossScalerBacksOffOnOverflow) {
    amp::LossScalerOptions o;
    o.init_scale = 1 << 20;
    run_script(o, {true, true, true, false}, {524288, 262144, 131072, 131072}, "three overflows in a row");
    o.backoff_factor = 0.25;
    run_script(o, {true}, {262144}, "backoff_factor 0.25");
}

TEST(Lab05, LossScalerGrowsAfterARunOfGoodSteps) {
    amp::LossScalerOptions o;
    o.init_scale = 8;
    o.growth_interval = 3;
    run_script(o, {false, false, false, false, false, false, false}, {8, 8, 16, 16, 16, 32, 32}, "growth every 3 steps");
    run_script(o, {false, false, true, false, false, false}, {8, 8, 4, 4, 4, 8},
               "an overflow resets the run of good steps");
    o.growth_factor = 4;
    o.growth_interval = 1;
    run_script(o, {false, true, false}, {32, 16, 64}, "growth_factor 4, interval 1");
}

TEST(Lab05, LossScalerStateRestoresExactly) {
    amp::LossScalerOptions o;
    o.init_scale = 64;
    o.growth_interval = 4;
    amp::DynamicLossScaler a(o);
    for (bool inf : {false, true, false, false}) a.update(inf);
    amp::DynamicLossScaler b(o);
    b.load_state(a.state());
    for (bool inf : {false, false, false, true, false}) {
        a.update(inf);
        b.update(inf);
        ASSERT_EQ(a.state(), b.state()) << "a restored scaler must continue exactly like the original";
    }
}

// ---- Task 4: the master-weight update -------------------------------------------------

TEST(Lab05, MasterWeightUpdateKeepsSmallUpdates) {
    for (bool keep : {true, false}) {
        Tensor w = from_vector<float>({1.0f, -0.5f}, {2}).set_requires_grad();
        amp::MasterWeights mw({w}, DType::Float16, keep);
        optim::SGD sgd(mw.masters(), 1.0);
        amp::LossScalerOptions o;
        o.init_scale = 1024;
        const amp::DynamicLossScaler scaler(o);
        for (int i = 0; i < 20; ++i) {
            mw.zero_grad();
            // scaled gradient 1024 * 1e-4 = 0.1024 in FP16: the update is 1e-4 per step,
            // a fifth of an FP16 ulp at 1.0
            w.set_grad(to_dtype(from_vector<float>({-0.1024f, 0.1024f}, {2}), DType::Float16));
            ASSERT_TRUE(mw.step(sgd, scaler)) << "finite gradients: the step must happen";
        }
        ASSERT_TRUE(mw.masters()[0].grad().defined()) << "give each master its working copy's gradient";
        const auto m = mw.masters()[0].to_vector<float>();
        const auto wf = to_dtype(w, DType::Float32).to_vector<float>();
        if (keep) {
            EXPECT_NEAR(m[0], 1.002, 2e-5) << "the FP32 master must add up 20 updates of 1e-4 (unscaled!)";
            EXPECT_NEAR(m[1], -0.502, 2e-5);
            EXPECT_EQ(wf[0], half_bits_to_float(float_to_half_bits(m[0]))) << "working copy = master rounded to FP16";
            EXPECT_EQ(wf[1], half_bits_to_float(float_to_half_bits(m[1])));
        } else {
            EXPECT_EQ(wf[0], 1.0f) << "without master weights each update rounds away";
            EXPECT_EQ(m[0], 1.0f) << "without master weights, round the master to FP16 too";
        }
    }
}

TEST(Lab05, MasterWeightUpdateSkipsOverflowingSteps) {
    Tensor w = from_vector<float>({1.0f, 2.0f}, {2}).set_requires_grad();
    amp::MasterWeights mw({w}, DType::Float16);
    optim::SGD sgd(mw.masters(), 0.1);
    const amp::DynamicLossScaler scaler;
    w.set_grad(to_dtype(from_vector<float>({1.0f, 1e6f}, {2}), DType::Float16));  // 1e6 overflows FP16: inf
    EXPECT_FALSE(mw.step(sgd, scaler)) << "an inf gradient must skip the step";
    EXPECT_EQ(mw.masters()[0].to_vector<float>(), (std::vector<float>{1.0f, 2.0f})) << "a skipped step changes nothing";
    EXPECT_EQ(to_dtype(w, DType::Float32).to_vector<float>(), (std::vector<float>{1.0f, 2.0f}));
}

// ---- Everything together --------------------------------------------------------------

TEST(Lab05, MixedPrecisionTrainingReachesTheFp32Band) {
    // The first 12,000 training images, 1 epoch; fp16 with your scaler and master
    // weights must land within 1.5 points of FP32 trained the same way.
    const std::string dir = default_fashion_mnist_dir().string();
    auto train = SubsetDataset::first(std::make_shared<MnistDataset>(dir, MnistSplit::Train), 12000);
    const auto test = SubsetDataset::first(std::make_shared<MnistDataset>(dir, MnistSplit::Test), 5000);
    double acc[2];
    for (int mixed = 0; mixed < 2; ++mixed) {
        Rng rng(0);
        auto net = nn::make_simple_net(rng);
        training::FitOptions opt;
        opt.epochs = 1;
        opt.precision.dtype = mixed ? DType::Float16 : DType::Float32;
        acc[mixed] = training::fit(*net, train, test.get(), opt).back().test.accuracy;
    }
    EXPECT_GT(acc[0], 0.78) << "the FP32 reference run should reach about 0.8";
    EXPECT_NEAR(acc[1], acc[0], 0.015) << "mixed precision (fp16, your scaler and master weights) reached " << acc[1]
                                       << ", FP32 " << acc[0];
}

}  // namespace
}  // namespace gl
