// Unit tests: modules and optimizers.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "nn/module.hpp"
#include "ops/ops.hpp"
#include "optim/optimizer.hpp"

namespace gl {
namespace {

TEST(NN, SimpleNetHasTheLectureShape) {
    Rng rng(0);
    auto net = nn::make_simple_net(rng);
    EXPECT_EQ(net->parameter_count(), 784 * 128 + 128 + 128 * 10 + 10);
    EXPECT_EQ(net->describe(), "Sequential(Linear(784 -> 128), ReLU, Linear(128 -> 10))");
    const auto named = net->named_parameters();
    ASSERT_EQ(named.size(), 4u);
    EXPECT_EQ(named[0].first, "0.weight");
    EXPECT_EQ(named[3].first, "2.bias");
    EXPECT_EQ((*net)(zeros({5, 784})).shape(), (Shape{5, 10}));
    EXPECT_THAT([&] { (*net)(zeros({5, 100})); },
                ::testing::ThrowsMessage<Error>(::testing::HasSubstr("expected input [batch, 784]")));
}

TEST(NN, KaimingInitHasTheRightSpread) {
    Rng rng(1);
    nn::Linear layer(600, 300, rng);
    const double bound = std::sqrt(6.0 / 600.0);
    double sum_sq = 0;
    for (float w : layer.weight.to_vector<float>()) {
        ASSERT_LE(std::abs(w), bound);
        sum_sq += w * w;
    }
    // Var(U(-b, b)) = b^2 / 3 = 2 / fan_in.
    EXPECT_NEAR(sum_sq / layer.weight.numel(), 2.0 / 600.0, 0.1 * 2.0 / 600.0);
}

TEST(NN, SameSeedSameModel) {
    Rng a(9), b(9);
    EXPECT_EQ(nn::make_simple_net(a)->parameters()[0].to_vector<float>(),
              nn::make_simple_net(b)->parameters()[0].to_vector<float>());
}

TEST(Optim, SgdWithMomentumFollowsTheFormula) {
    Tensor p = from_vector<float>({1.0f}, {1}).set_requires_grad();
    optim::SGD opt({p}, 0.1, 0.9);
    // loss = 2p, gradient 2 each step: v1 = 2, v2 = 0.9*2 + 2 = 3.8.
    for (int i = 0; i < 2; ++i) {
        opt.zero_grad();
        sum(p * 2.0).backward();
        opt.step();
    }
    EXPECT_NEAR(p.item(), 1.0 - 0.1 * 2.0 - 0.1 * 3.8, 1e-6);
}

TEST(Optim, AdamFirstStepIsLrTimesSign) {
    Tensor p = from_vector<float>({1.0f, -1.0f}, {2}).set_requires_grad();
    optim::Adam opt({p}, 0.01);
    sum(p * p * 3.0).backward();
    opt.step();
    // With bias correction, the first step is lr * g / (|g| + eps') = lr * sign(g).
    EXPECT_NEAR(p.at({0}), 0.99, 1e-6);
    EXPECT_NEAR(p.at({1}), -0.99, 1e-6);
}

TEST(Optim, ZeroGradAndBadSettings) {
    Tensor p = ones({2}).set_requires_grad();
    optim::SGD opt({p}, 0.1);
    sum(p).backward();
    EXPECT_TRUE(p.grad().defined());
    opt.zero_grad();
    EXPECT_FALSE(p.grad().defined());
    opt.step();  // no gradient: nothing changes
    EXPECT_EQ(p.to_vector<float>(), (std::vector<float>{1, 1}));
    EXPECT_THROW(optim::SGD({p}, -1.0), Error);
    EXPECT_THROW(optim::SGD({p * 2.0}, 0.1), Error);
    EXPECT_THROW(optim::Adam({p}, 0.1, 1.5), Error);
}

}  // namespace
}  // namespace gl
