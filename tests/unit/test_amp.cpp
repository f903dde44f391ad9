// Mixed precision: autocast, the dynamic loss scaler (GradScaler semantics), FP32 master
// weights, and a short mixed-precision training run.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "ops/autocast.hpp"
#include "amp/loss_scaler.hpp"
#include "amp/master_weights.hpp"
#include "nn/module.hpp"
#include "ops/ops.hpp"
#include "training/trainer.hpp"

namespace gl::amp {
namespace {

TEST(Autocast, MatmulRunsIn16BitAndHandsOnFloat32) {
    Rng rng(1);
    Tensor a = rand_uniform({4, 6}, -1, 1, rng).set_requires_grad();
    Tensor b = rand_uniform({6, 3}, -1, 1, rng).set_requires_grad();
    Tensor c;
    {
        const AutocastGuard on(DType::Float16);
        c = matmul(a, b);
        EXPECT_EQ(autocast_dtype(), DType::Float16);
    }
    EXPECT_FALSE(autocast_dtype().has_value());
    EXPECT_EQ(c.dtype(), DType::Float32);
    const Tensor want = to_dtype(to_dtype(matmul(to_dtype(to_dtype(a, DType::Float16), DType::Float32),
                                                 to_dtype(to_dtype(b, DType::Float16), DType::Float32)),
                                          DType::Float16),
                                 DType::Float32);
    EXPECT_EQ(c.to_vector<float>(), want.to_vector<float>());
    sum(c).backward();  // the backward matmuls run in FP16, the gradients arrive in FP32
    ASSERT_TRUE(a.grad().defined());
    EXPECT_EQ(a.grad().dtype(), DType::Float32);
    EXPECT_NEAR(a.grad().at({0, 0}), sum(b, {1}).at({0}), 1e-2);
    EXPECT_THROW(AutocastGuard(DType::Float64), Error);
}

TEST(LossScaler, ScalesUnscalesAndFindsInf) {
    DynamicLossScaler scaler;
    EXPECT_EQ(scaler.scale_value(), 65536.0);
    EXPECT_EQ(scaler.scale(scalar(2.0)).item(), 131072.0);
    Tensor g = from_vector<float>({65536.0f, -131072.0f}, {2});
    EXPECT_FALSE(scaler.unscale_({g, Tensor()}));
    EXPECT_EQ(g.to_vector<float>(), (std::vector<float>{1.0f, -2.0f}));
    Tensor bad = from_vector<float>({1.0f, std::numeric_limits<float>::quiet_NaN()}, {2});
    EXPECT_TRUE(scaler.unscale_({g, bad}));
}

TEST(LossScaler, BacksOffGrowsAndRestores) {
    LossScalerOptions o;
    o.init_scale = 1024;
    o.growth_interval = 3;
    DynamicLossScaler s(o);
    s.update(true);
    EXPECT_EQ(s.scale_value(), 512);
    for (int i = 0; i < 2; ++i) s.update(false);
    EXPECT_EQ(s.scale_value(), 512);
    s.update(false);
    EXPECT_EQ(s.scale_value(), 1024) << "grows after 3 good steps in a row";
    s.update(false);
    const LossScalerState saved = s.state();
    DynamicLossScaler t(o);
    t.load_state(saved);
    EXPECT_EQ(t.state(), saved);
    s.update(false), t.update(false);
    s.update(false), t.update(false);
    EXPECT_EQ(t.scale_value(), 2048);
    EXPECT_EQ(t.state(), s.state());
    EXPECT_EQ(t.state().skipped_steps, 1);
    LossScalerState broken;
    broken.scale = 0;
    EXPECT_THROW(t.load_state(broken), Error);
    LossScalerOptions off;
    off.enabled = false;
    DynamicLossScaler d(off);
    Tensor nan = from_vector<float>({std::numeric_limits<float>::quiet_NaN()}, {1});
    EXPECT_FALSE(d.unscale_({nan})) << "a disabled scaler never skips";
    EXPECT_EQ(d.scale_value(), 1.0);
}

TEST(MasterWeights, SmallUpdatesAccumulateInTheMasterButVanishIn16Bit) {
    for (bool keep : {true, false}) {
        Tensor w = from_vector<float>({1.0f}, {1}).set_requires_grad();
        MasterWeights mw({w}, DType::Float16, keep);
        EXPECT_EQ(w.dtype(), DType::Float16);
        optim::SGD sgd(mw.masters(), 1.0);
        LossScalerOptions off;
        off.enabled = false;
        const DynamicLossScaler scaler(off);
        mw.collect_stats(true);
        for (int i = 0; i < 10; ++i) {
            mw.zero_grad();
            w.set_grad(to_dtype(from_vector<float>({-2e-4f}, {1}), DType::Float16));  // 1/5 of an FP16 ulp at 1
            EXPECT_TRUE(mw.step(sgd, scaler));
        }
        const double w_now = w.item();
        if (keep) {
            EXPECT_NEAR(mw.masters()[0].item(), 1.002, 1e-6);
            EXPECT_EQ(w_now, 1.0 + std::exp2(-9.0)) << "the working copy moved once the updates added up";
            EXPECT_EQ(mw.stats().vanished, 0);
        } else {
            EXPECT_EQ(w_now, 1.0) << "every update was below half an ulp and rounded away";
            EXPECT_EQ(mw.stats().vanished, 10);
        }
        EXPECT_EQ(mw.stats().updated, 10);
    }
}

TEST(MasterWeights, SkipsTheStepOnOverflow) {
    Tensor w = from_vector<float>({1.0f, 2.0f}, {2}).set_requires_grad();
    MasterWeights mw({w}, DType::BFloat16);
    optim::SGD sgd(mw.masters(), 0.5);
    const DynamicLossScaler scaler;
    w.set_grad(to_dtype(from_vector<float>({1.0f, std::numeric_limits<float>::infinity()}, {2}), DType::BFloat16));
    EXPECT_FALSE(mw.step(sgd, scaler));
    EXPECT_EQ(to_dtype(w, DType::Float32).to_vector<float>(), (std::vector<float>{1.0f, 2.0f}));
}

TEST(MixedPrecisionTraining, LearnsASeparableProblem) {
    // Two Gaussian blobs; every precision setting must learn them.
    Rng rng(7);
    const std::int64_t n = 512;
    Tensor x = randn({n, 8}, rng);
    std::vector<std::int32_t> labels(n);
    float* xp = x.data<float>();
    for (std::int64_t i = 0; i < n; ++i) {
        labels[static_cast<std::size_t>(i)] = static_cast<std::int32_t>(i % 2);
        xp[i * 8] += i % 2 ? 2.0f : -2.0f;
    }
    auto data = std::make_shared<TensorDataset>(x, from_vector<std::int32_t>(labels, {n}), 2);
    for (const char* p : {"fp32", "fp16", "bf16"}) {
        Rng init(1);
        auto net = nn::make_simple_net(init, 8, 16, 2);
        training::FitOptions opt;
        opt.epochs = 3;
        opt.batch_size = 32;
        opt.lr = 1e-2;
        opt.precision.dtype = training::parse_precision(p);
        const auto reports = training::fit(*net, data, data.get(), opt);
        EXPECT_GT(reports.back().test.accuracy, 0.95) << p;
        if (std::string(p) != "fp32") {
            EXPECT_EQ(net->parameters()[0].dtype(), opt.precision.dtype);
        }
    }
    EXPECT_THROW(training::parse_precision("fp8"), Error);
}

}  // namespace
}  // namespace gl::amp
