// Lab 05 graded tests: float <-> half conversion, the dynamic loss scaler and the
// master-weight update. Points per test are in labs/05-mixed-precision/rubric.json.
// The conversions are checked against Eigen's half (an independent implementation) on
// every 16-bit pattern and on random floats, and against the CPU's F16C where it has it.
//
// The student's code is called only inside graded::student (graded.hpp): the grader
// records its results in a sandbox and checks them in this program built from the
// reference (the trained network's weights too: the checker evaluates them itself).
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
#include "graded.hpp"

namespace gl {
namespace {

std::uint32_t bits_of(float f) { return std::bit_cast<std::uint32_t>(f); }
std::uint16_t eigen_half_bits(float f) { return Eigen::numext::bit_cast<std::uint16_t>(Eigen::half(f)); }
float eigen_half_value(std::uint16_t h) { return static_cast<float>(Eigen::numext::bit_cast<Eigen::half>(h)); }

// The student's float_to_half_bits of each of @p floats.
std::vector<std::uint16_t> student_halves(const std::string& key, const std::vector<float>& floats) {
    return graded::student<std::vector<std::uint16_t>>(key, [&] {
        std::vector<std::uint16_t> out;
        for (const float f : floats) out.push_back(float_to_half_bits(f));
        return out;
    });
}

// The student's float_to_half_bits of one float.
std::uint16_t student_half(const std::string& key, float f) { return student_halves(key, {f}).at(0); }

std::string hex(std::uint32_t v) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "0x%x", v);
    return buf;
}

// ---- Task 1: half -> float ------------------------------------------------------------

TEST(Lab05, HalfToFloatOnEveryPattern) {
    const auto floats = graded::student<std::vector<float>>("half_bits_to_float", [] {
        std::vector<float> out;
        for (std::uint32_t i = 0; i < 65536; ++i) out.push_back(half_bits_to_float(static_cast<std::uint16_t>(i)));
        return out;
    });
    ASSERT_EQ(floats.size(), 65536u);
    int wrong = 0;
    for (std::uint32_t i = 0; i < 65536; ++i) {
        const auto h = static_cast<std::uint16_t>(i);
        const float got = floats[i];
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
    std::vector<float> exact;
    for (std::uint32_t i = 0; i < 65536; ++i) exact.push_back(eigen_half_value(static_cast<std::uint16_t>(i)));
    const auto halves = student_halves("exact halves", exact);
    ASSERT_EQ(halves.size(), exact.size());
    int wrong = 0;
    for (std::uint32_t i = 0; i < 65536; ++i) {
        const auto h = static_cast<std::uint16_t>(i);
        const float f = exact[i];
        if (std::isnan(f)) continue;  // checked in HalfFromFloatSpecialValues
        const std::uint16_t got = halves[i];
        if (got != h && ++wrong <= 5) ADD_FAILURE() << f << " is exactly half " << hex(h) << "; you returned " << hex(got);
    }
    EXPECT_EQ(wrong, 0) << wrong << " of 63488 non-NaN patterns do not survive float -> half";
}

TEST(Lab05, HalfFromFloatRoundsToNearestEven) {
    // Every midpoint between two neighbouring halves must go to the even one.
    std::vector<float> mids;
    for (std::uint32_t h = 0; h < 0x7BFF; ++h) {
        const float lo = eigen_half_value(static_cast<std::uint16_t>(h));
        const float hi = eigen_half_value(static_cast<std::uint16_t>(h + 1));
        mids.push_back(lo + (hi - lo) / 2);
    }
    const auto mid_halves = student_halves("midpoints", mids);
    ASSERT_EQ(mid_halves.size(), mids.size());
    int wrong = 0;
    for (std::uint32_t h = 0; h < 0x7BFF; ++h) {
        const float mid = mids[h];
        const std::uint16_t got = mid_halves[h], want = eigen_half_bits(mid);
        if (got != want && ++wrong <= 5)
            ADD_FAILURE() << mid << " lies exactly between halves " << hex(h) << " and " << hex(h + 1) << ": round to the even one, "
                          << hex(want) << "; you returned " << hex(got);
    }
    EXPECT_EQ(wrong, 0);
    std::mt19937 gen(5);
    std::uniform_int_distribution<std::uint32_t> any;
    std::uniform_real_distribution<float> exponent(-28.0f, 17.0f);
    std::vector<float> randoms;
    for (int i = 0; i < 200000; ++i) {
        const float f = i % 2 ? std::bit_cast<float>(any(gen)) : std::exp2(exponent(gen)) * (i % 4 ? 1 : -1);
        if (!std::isnan(f)) randoms.push_back(f);
    }
    const auto random_halves = student_halves("random floats", randoms);
    ASSERT_EQ(random_halves.size(), randoms.size());
    for (std::size_t i = 0; i < randoms.size(); ++i) {
        const float f = randoms[i];
        ASSERT_EQ(random_halves[i], eigen_half_bits(f)) << "float " << f << " (bits " << hex(bits_of(f)) << ")";
    }
}

TEST(Lab05, HalfFromFloatSubnormalsAndOverflow) {
    EXPECT_EQ(student_half("conversion", std::exp2(-24.0f)), 0x0001) << "2^-24 is the smallest subnormal half";
    EXPECT_EQ(student_half("conversion", std::exp2(-25.0f)), 0x0000) << "2^-25 is halfway to 0: ties to even give 0";
    EXPECT_EQ(student_half("conversion", 1.5f * std::exp2(-25.0f)), 0x0001);
    EXPECT_EQ(student_half("conversion", -1023.5f * std::exp2(-24.0f)), 0x8400) << "rounds up into the smallest normal";
    EXPECT_EQ(student_half("conversion", 1e-30f), 0x0000);
    EXPECT_EQ(student_half("conversion", -0.0f), 0x8000) << "keep the sign of zero";
    EXPECT_EQ(student_half("conversion", 65519.0f), 0x7BFF);
    EXPECT_EQ(student_half("conversion", 65520.0f), 0x7C00) << "65520 is halfway past 65504: ties to even give infinity";
    EXPECT_EQ(student_half("conversion", 1e10f), 0x7C00);
    EXPECT_EQ(student_half("conversion", -std::numeric_limits<float>::infinity()), 0xFC00);
}

TEST(Lab05, HalfFromFloatSpecialValues) {
    const std::uint16_t q = student_half("quiet NaN", std::numeric_limits<float>::quiet_NaN());
    EXPECT_TRUE((q & 0x7C00) == 0x7C00 && (q & 0x3FF)) << "NaN must stay NaN, got " << hex(q);
    const std::uint16_t s = student_half("signalling NaN", std::bit_cast<float>(0xFF800001u));
    EXPECT_TRUE((s & 0x7C00) == 0x7C00 && (s & 0x200) && (s & 0x8000))
        << "a signalling NaN with a payload only in low bits must still be a NaN (quiet, sign kept), got " << hex(s);
    if (numerics::available(numerics::ConvertPath::F16C)) {
        std::vector<float> f = {std::bit_cast<float>(0x7FA00000u), std::bit_cast<float>(0xFFC12345u)};
        std::vector<std::uint16_t> hw(2);
        numerics::float_to_half(f.data(), hw.data(), 2, numerics::ConvertPath::F16C);
        const auto got = student_halves("NaN payloads", f);
        ASSERT_EQ(got.size(), f.size());
        for (std::size_t i = 0; i < f.size(); ++i)
            EXPECT_EQ(got[i], hw[i]) << "NaN payloads: keep the top 9 payload bits, as F16C does";
    }
}

// ---- Task 3: the loss scaler ----------------------------------------------------------

TEST(Lab05, LossScalerUnscalesAndDetectsOverflow) {
    const auto [finite, a, b, inf, nan] =
        graded::student<std::tuple<bool, Tensor, Tensor, bool, bool>>("unscale_", [] {
            const amp::DynamicLossScaler scaler;  // scale 65536
            Tensor ga = from_vector<float>({65536.0f, -32768.0f, 0.0f}, {3});
            Tensor gb = from_vector<float>({131072.0f}, {1});
            const bool found_finite = scaler.unscale_({ga, Tensor(), gb});
            Tensor c = from_vector<float>({1.0f, std::numeric_limits<float>::infinity()}, {2});
            Tensor d = from_vector<float>({std::numeric_limits<float>::quiet_NaN(), 1.0f}, {2});
            Tensor ga2 = ga.clone();
            return std::tuple{found_finite, ga, gb, scaler.unscale_({c}), scaler.unscale_({ga2, d})};
        });
    EXPECT_FALSE(finite) << "finite gradients: no overflow";
    ASSERT_TRUE(a.defined() && b.defined());
    EXPECT_EQ(a.to_vector<float>(), (std::vector<float>{1.0f, -0.5f, 0.0f})) << "divide every gradient by the scale";
    EXPECT_EQ(b.to_vector<float>(), (std::vector<float>{2.0f}));
    EXPECT_TRUE(inf) << "an inf gradient must be reported";
    EXPECT_TRUE(nan) << "a NaN gradient must be reported";
}

// A script: for each step, whether its gradients overflow; the expected scale after it.
void run_script(const amp::LossScalerOptions& o, const std::vector<bool>& overflow, const std::vector<double>& scales,
                const std::string& what) {
    // The scale after each step, then the skipped steps the scaler counted.
    const auto got = graded::student<std::vector<double>>(what, [&] {
        amp::DynamicLossScaler s(o);
        std::vector<double> out;
        for (const bool inf : overflow) {
            s.update(inf);
            out.push_back(s.scale_value());
        }
        out.push_back(static_cast<double>(s.state().skipped_steps));
        return out;
    });
    ASSERT_EQ(got.size(), overflow.size() + 1);
    std::int64_t skipped = 0;
    for (std::size_t i = 0; i < overflow.size(); ++i) {
        skipped += overflow[i];
        ASSERT_EQ(got[i], scales[i]) << what << ": wrong scale after step " << i + 1 << " ("
                                              << (overflow[i] ? "overflow" : "finite") << ")";
    }
    EXPECT_EQ(got.back(), static_cast<double>(skipped)) << what << ": count every skipped (overflow) step";
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
    // Each step's state of the original and of the restored scaler.
    using State = std::tuple<double, std::int64_t, std::int64_t>;
    const auto states = graded::student<std::vector<std::pair<State, State>>>("states", [&] {
        const auto fields = [](const amp::LossScalerState& s) { return State{s.scale, s.growth_tracker, s.skipped_steps}; };
        amp::DynamicLossScaler a(o);
        for (bool inf : {false, true, false, false}) a.update(inf);
        amp::DynamicLossScaler b(o);
        b.load_state(a.state());
        std::vector<std::pair<State, State>> out;
        for (bool inf : {false, false, false, true, false}) {
            a.update(inf);
            b.update(inf);
            out.emplace_back(fields(a.state()), fields(b.state()));
        }
        return out;
    });
    ASSERT_EQ(states.size(), 5u);
    // After 4 steps (one overflow): 32, then growth every 4 good steps.
    const std::vector<double> scales = {32, 64, 64, 32, 32};
    for (std::size_t i = 0; i < states.size(); ++i) {
        ASSERT_EQ(states[i].first, states[i].second) << "a restored scaler must continue exactly like the original";
        EXPECT_EQ(std::get<0>(states[i].first), scales[i]) << "the scale after restored step " << i + 1;
    }
}

// ---- Task 4: the master-weight update -------------------------------------------------

TEST(Lab05, MasterWeightUpdateKeepsSmallUpdates) {
    for (bool keep : {true, false}) {
        // Whether every step happened, whether the master got a gradient, the master, the
        // working copy.
        const auto [stepped, has_grad, master, working] =
            graded::student<std::tuple<bool, bool, Tensor, Tensor>>("master weights", [&] {
                Tensor w = from_vector<float>({1.0f, -0.5f}, {2}).set_requires_grad();
                amp::MasterWeights mw({w}, DType::Float16, keep);
                optim::SGD sgd(mw.masters(), 1.0);
                amp::LossScalerOptions o;
                o.init_scale = 1024;
                const amp::DynamicLossScaler scaler(o);
                bool all = true;
                for (int i = 0; i < 20; ++i) {
                    mw.zero_grad();
                    // scaled gradient 1024 * 1e-4 = 0.1024 in FP16: the update is 1e-4 per
                    // step, a fifth of an FP16 ulp at 1.0
                    w.set_grad(to_dtype(from_vector<float>({-0.1024f, 0.1024f}, {2}), DType::Float16));
                    all = mw.step(sgd, scaler) && all;
                }
                return std::tuple{all, mw.masters()[0].grad().defined(), mw.masters()[0].detach().clone(),
                                  w.detach().clone()};
            });
        ASSERT_TRUE(stepped) << "finite gradients: the step must happen";
        ASSERT_TRUE(has_grad) << "give each master its working copy's gradient";
        ASSERT_TRUE(master.defined() && working.defined() && master.numel() == 2 && working.numel() == 2);
        ASSERT_EQ(working.dtype(), DType::Float16) << "the working copy must stay FP16";
        const auto m = master.to_vector<float>();
        const auto wf = to_dtype(working, DType::Float32).to_vector<float>();
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
    const auto [stepped, master, working] = graded::student<std::tuple<bool, Tensor, Tensor>>("overflow", [] {
        Tensor w = from_vector<float>({1.0f, 2.0f}, {2}).set_requires_grad();
        amp::MasterWeights mw({w}, DType::Float16);
        optim::SGD sgd(mw.masters(), 0.1);
        const amp::DynamicLossScaler scaler;
        w.set_grad(to_dtype(from_vector<float>({1.0f, 1e6f}, {2}), DType::Float16));  // 1e6 overflows FP16: inf
        const bool step = mw.step(sgd, scaler);
        return std::tuple{step, mw.masters()[0].detach().clone(), w.detach().clone()};
    });
    EXPECT_FALSE(stepped) << "an inf gradient must skip the step";
    ASSERT_TRUE(master.defined() && working.defined());
    EXPECT_EQ(master.to_vector<float>(), (std::vector<float>{1.0f, 2.0f})) << "a skipped step changes nothing";
    EXPECT_EQ(to_dtype(working, DType::Float32).to_vector<float>(), (std::vector<float>{1.0f, 2.0f}));
}

// ---- Everything together --------------------------------------------------------------

TEST(Lab05, MixedPrecisionTrainingReachesTheFp32Band) {
    // The first 12,000 training images, 1 epoch; fp16 with your scaler and master
    // weights must land within 1.5 points of FP32 trained the same way.
    const std::string dir = default_fashion_mnist_dir().string();
    auto train = SubsetDataset::first(std::make_shared<MnistDataset>(dir, MnistSplit::Train), 12000);
    const auto test = SubsetDataset::first(std::make_shared<MnistDataset>(dir, MnistSplit::Test), 5000);
    // FP32 trained here; the mixed-precision run's weights are recorded and evaluated here.
    double acc[2];
    for (int mixed = 0; mixed < 2; ++mixed) {
        Rng rng(0);
        auto net = nn::make_simple_net(rng);
        training::FitOptions opt;
        opt.epochs = 1;
        opt.precision.dtype = mixed ? DType::Float16 : DType::Float32;
        if (!mixed) {
            acc[0] = training::fit(*net, train, test.get(), opt).back().test.accuracy;
            continue;
        }
        const auto weights = graded::student<std::vector<Tensor>>("mixed-precision weights", [&] {
            training::fit(*net, train, test.get(), opt);
            std::vector<Tensor> out;
            for (const Tensor& p : net->parameters()) out.push_back(p.detach().clone());
            return out;
        });
        Rng same(0);
        auto evaluated = nn::make_simple_net(same);
        const auto params = evaluated->parameters();
        ASSERT_EQ(weights.size(), params.size()) << "the trained network has a different number of parameters";
        for (std::size_t i = 0; i < params.size(); ++i) {
            ASSERT_EQ(weights[i].shape(), params[i].shape()) << "parameter " << i << " changed its shape";
            Tensor(params[i]).set_data(to_dtype(weights[i], DType::Float32));
        }
        acc[1] = training::evaluate(*evaluated, *test).accuracy;
    }
    EXPECT_GT(acc[0], 0.78) << "the FP32 reference run should reach about 0.8";
    EXPECT_NEAR(acc[1], acc[0], 0.015) << "mixed precision (fp16, your scaler and master weights) reached " << acc[1]
                                       << ", FP32 " << acc[0];
}

}  // namespace
}  // namespace gl
