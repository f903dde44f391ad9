// Unit tests: autograd bookkeeping (grad mode, leaves, hooks, errors).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "autograd/grad_mode.hpp"
#include "autograd/node.hpp"
#include "autograd/gradcheck.hpp"
#include "memory/tracking_allocator.hpp"
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

TEST(Autograd, ALeafTakesOverAGradientNobodyElseHoldsWithoutCopyingIt) {
    memory::TrackingAllocator tracker;
    {
        memory::DefaultAllocatorScope use(tracker);
        Tensor w = ones({64, 32}).set_requires_grad();
        const Tensor x = ones({8, 64});
        const Tensor loss = sum(matmul(x, w));
        tracker.reset_peaks();
        const std::size_t before = tracker.stats().total_current;
        loss.backward();
        // The gradient of w is matmul(t(x), g): one 64 x 32 result, handed to w as is. A
        // copy would hold a second block of that size at the same time.
        const std::size_t w_bytes = 64 * 32 * sizeof(float);
        EXPECT_EQ(tracker.stats().current_of(memory::MemoryCategory::Gradient), w_bytes)
            << "the taken-over bytes count as a gradient";
        EXPECT_LT(tracker.stats().total_peak - before, 2 * w_bytes)
            << "backward held the gradient twice at once: it was copied";
        EXPECT_EQ(w.grad().to_vector<float>(), std::vector<float>(64 * 32, 8.0f));
    }
}

TEST(Autograd, LeavesSharingOneIncomingGradientGetCopiesTheirOwn) {
    // add's backward hands the same tensor to both inputs: neither leaf may take it over,
    // or accumulating into one would change the other.
    Tensor a = ones({4}).set_requires_grad(), b = ones({4}).set_requires_grad();
    sum(a + b).backward();
    add_(a.grad(), ones({4}));
    EXPECT_EQ(a.grad().to_vector<float>(), (std::vector<float>{2, 2, 2, 2}));
    EXPECT_EQ(b.grad().to_vector<float>(), (std::vector<float>{1, 1, 1, 1}));
    sum(a + b).backward();  // accumulates into the grads each leaf owns
    EXPECT_EQ(a.grad().to_vector<float>(), (std::vector<float>{3, 3, 3, 3}));
    EXPECT_EQ(b.grad().to_vector<float>(), (std::vector<float>{2, 2, 2, 2}));
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
