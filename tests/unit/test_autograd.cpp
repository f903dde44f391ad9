// Unit tests: autograd bookkeeping (grad mode, leaves, hooks, errors).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "autograd/grad_mode.hpp"
#include "autograd/node.hpp"
#include "autograd/gradcheck.hpp"
#include "ops/ops.hpp"

namespace gl {
namespace {

using ::testing::HasSubstr;

TEST(Autograd, NoGradGuardStopsRecording) {
    Tensor x = ones({2}).set_requires_grad();
    {
        NoGradGuard guard;
        EXPECT_FALSE(GradMode::enabled());
        EXPECT_FALSE((x * 2.0).requires_grad());
    }
    EXPECT_TRUE(GradMode::enabled());
    EXPECT_TRUE((x * 2.0).requires_grad());
}

TEST(Autograd, LeavesAndResults) {
    Tensor x = ones({2}).set_requires_grad();
    Tensor y = x * 2.0;
    EXPECT_TRUE(x.is_leaf());
    EXPECT_FALSE(y.is_leaf());
    EXPECT_EQ(y.grad_fn()->name(), "ScaleBackward");
    EXPECT_THAT([&] { y.set_requires_grad(); }, ::testing::ThrowsMessage<Error>(HasSubstr("only leaf")));
    EXPECT_FALSE(y.detach().requires_grad());
    EXPECT_THAT([] { ones({2}, DType::Int32).set_requires_grad(); },
                ::testing::ThrowsMessage<Error>(HasSubstr("cannot carry gradients")));
}

TEST(Autograd, BackwardErrorsSayWhatToDo) {
    EXPECT_THAT([] { sum(ones({2})).backward(); },
                ::testing::ThrowsMessage<Error>(HasSubstr("does not require grad")));
    Tensor x = ones({2}).set_requires_grad();
    EXPECT_THAT([&] { (x * 2.0).backward(); }, ::testing::ThrowsMessage<Error>(HasSubstr("only a scalar")));
    (x * 2.0).backward(ones({2}));
    EXPECT_EQ(x.grad().to_vector<float>(), (std::vector<float>{2, 2}));
}

TEST(Autograd, GradHooksSeeEachAccumulation) {
    Tensor x = ones({3}).set_requires_grad();
    int calls = 0;
    x.impl().grad_hooks.push_back([&](const Tensor& g) {
        ++calls;
        EXPECT_EQ(g.shape(), (Shape{3}));
    });
    sum(x * 2.0).backward();
    sum(x).backward();
    EXPECT_EQ(calls, 2);
    EXPECT_EQ(x.grad().to_vector<float>(), (std::vector<float>{3, 3, 3}));
}

TEST(Autograd, GraphDoesNotKeepParametersAlive) {
    std::weak_ptr<TensorImpl> weak;
    Tensor y;
    {
        Tensor w = ones({2}).set_requires_grad();
        weak = w.impl_ptr();
        y = sum(w * 2.0);
    }
    // The scale node saved no copy of w and the accumulator holds it weakly.
    EXPECT_TRUE(weak.expired());
    y.backward();  // nothing to accumulate into; must not crash
}

TEST(Autograd, GradcheckCatchesAWrongGradient) {
    // sum(x*x) checked against a function that detaches half of the product.
    Rng rng(1);
    Tensor x = rand_uniform({4}, -1, 1, rng, DType::Float64).set_requires_grad();
    const GradcheckResult good = gradcheck([](const std::vector<Tensor>& v) { return v[0] * v[0]; }, {x});
    EXPECT_TRUE(good.ok) << good.message;
    const GradcheckResult bad = gradcheck([](const std::vector<Tensor>& v) { return v[0] * v[0].detach(); }, {x});
    EXPECT_FALSE(bad.ok);
    EXPECT_THAT(bad.message, HasSubstr("gradients differ"));
}

}  // namespace
}  // namespace gl
