// Lab 01 graded tests: the backward of each op and the backward walk.
// Points per test are in labs/01-autograd/rubric.json. Every check compares the
// student's backward with central finite differences in float64 (gradcheck).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "autograd/engine.hpp"
#include "data/mnist.hpp"
#include "autograd/gradcheck.hpp"
#include "ops/ops.hpp"
#include "training/toy_models.hpp"
#include "training/trainer.hpp"

namespace gl {
namespace {

Tensor input(const Shape& shape, std::uint64_t seed, double lo = -2.0, double hi = 2.0) {
    Rng rng(seed);
    return rand_uniform(shape, lo, hi, rng, DType::Float64).set_requires_grad();
}

void expect_gradients_match(const std::function<Tensor(const std::vector<Tensor>&)>& fn,
                            const std::vector<Tensor>& inputs, const std::string& what) {
    const GradcheckResult r = gradcheck(fn, inputs);
    EXPECT_TRUE(r.ok) << what << ": " << r.message;
}

// ---- Task 1: the backward walk --------------------------------------------------------

TEST(Lab01, TopologicalOrderPutsEveryNodeBeforeItsInputs) {
    // A diamond: x feeds a and b, both feed c.
    Tensor x = input({2, 2}, 1);
    Tensor a = relu(x);
    Tensor b = x * 3.0;
    Tensor c = a + b;
    Tensor loss = sum(c);
    const std::vector<Node*> order = topological_order(loss.grad_fn().get());
    ASSERT_FALSE(order.empty()) << "topological_order returned nothing";
    EXPECT_EQ(order.front(), loss.grad_fn().get()) << "the root must come first";
    std::set<Node*> unique(order.begin(), order.end());
    EXPECT_EQ(unique.size(), order.size()) << "a node appears twice: visit each node once";
    // Every edge goes from an earlier node to a later one.
    for (std::size_t i = 0; i < order.size(); ++i)
        for (const auto& next : order[i]->next) {
            if (!next) continue;
            auto pos = std::find(order.begin(), order.end(), next.get());
            ASSERT_NE(pos, order.end()) << order[i]->name() << " points to a node missing from the order";
            EXPECT_GT(pos - order.begin(), static_cast<std::ptrdiff_t>(i))
                << next->name() << " comes before " << order[i]->name() << ", which feeds it a gradient";
        }
}

TEST(Lab01, TopologicalOrderHandlesDeepGraphs) {
    // 20,000 chained ops: recursion this deep can overflow the stack.
    Tensor x = input({1}, 2);
    Tensor h = x;
    for (int i = 0; i < 20000; ++i) h = h * 1.0;
    const std::vector<Node*> order = topological_order(h.grad_fn().get());
    EXPECT_EQ(order.size(), 20001u) << "20,000 scale nodes and one leaf accumulator";
}

TEST(Lab01, BackwardWalkSumsGradientsFromSeveralPaths) {
    // y = x*x + x uses x three times: dy/dx = 2x + 1.
    Tensor x = from_vector<double>({-1.5, 0.5, 2.0}, {3}).set_requires_grad();
    sum(x * x + x).backward();
    ASSERT_TRUE(x.grad().defined()) << "no gradient reached the leaf x";
    const std::vector<double> g = x.grad().to_vector<double>();
    EXPECT_DOUBLE_EQ(g[0], -2.0);
    EXPECT_DOUBLE_EQ(g[1], 2.0);
    EXPECT_DOUBLE_EQ(g[2], 5.0);
}

TEST(Lab01, BackwardWalkAccumulatesAcrossCalls) {
    Tensor x = from_vector<double>({1.0, 2.0}, {2}).set_requires_grad();
    sum(x * 3.0).backward();
    sum(x * 3.0).backward();
    ASSERT_TRUE(x.grad().defined());
    EXPECT_EQ(x.grad().to_vector<double>(), (std::vector<double>{6.0, 6.0}))
        << "two backward calls must add their gradients into the leaf";
}

// ---- Task 2: add with broadcasting ----------------------------------------------------

TEST(Lab01, SumToReducesBroadcastAxes) {
    Rng rng(3);
    const Tensor g = rand_uniform({2, 3, 4}, -1, 1, rng, DType::Float64);
    const Tensor r1 = sum_to(g, {4});
    ASSERT_EQ(r1.shape(), (Shape{4}));
    EXPECT_NEAR(r1.at({0}), sum(g, {0, 1}).at({0}), 1e-12);
    const Tensor r2 = sum_to(g, {3, 1});
    ASSERT_EQ(r2.shape(), (Shape{3, 1}));
    const Tensor expected = sum(g, {0, 2}, true);
    for (std::int64_t i = 0; i < 3; ++i) EXPECT_NEAR(r2.at({i, 0}), expected.at({0, i, 0}), 1e-12);
    EXPECT_EQ(sum_to(g, {2, 3, 4}).shape(), (Shape{2, 3, 4}));
    EXPECT_NEAR(sum_to(g, {}).item(), sum(g).item(), 1e-12);
}

TEST(Lab01, AddBackwardWithBroadcasting) {
    const auto add_fn = [](const std::vector<Tensor>& v) { return add(v[0], v[1]); };
    expect_gradients_match(add_fn, {input({3, 4}, 4), input({3, 4}, 5)}, "[3,4] + [3,4]");
    expect_gradients_match(add_fn, {input({5, 4}, 6), input({4}, 7)}, "[5,4] + [4] (a bias)");
    expect_gradients_match(add_fn, {input({3, 1}, 8), input({1, 4}, 9)}, "[3,1] + [1,4]");
    expect_gradients_match(add_fn, {input({2, 3, 4}, 10), input({3, 1}, 11)}, "[2,3,4] + [3,1]");
    expect_gradients_match(add_fn, {input({}, 12), input({2, 2}, 13)}, "scalar + [2,2]");
}

// ---- Task 3: matmul -------------------------------------------------------------------

TEST(Lab01, MatmulBackward) {
    const auto mm = [](const std::vector<Tensor>& v) { return matmul(v[0], v[1]); };
    expect_gradients_match(mm, {input({1, 1}, 14), input({1, 1}, 15)}, "1x1 @ 1x1");
    expect_gradients_match(mm, {input({3, 5}, 16), input({5, 2}, 17)}, "3x5 @ 5x2");
    expect_gradients_match(mm, {input({7, 1}, 18), input({1, 4}, 19)}, "7x1 @ 1x4 (outer product)");
    expect_gradients_match(mm, {input({2, 9}, 20), input({9, 1}, 21)}, "2x9 @ 9x1");
}

TEST(Lab01, MatmulBackwardThroughTransposedViews) {
    const auto mm_t = [](const std::vector<Tensor>& v) { return matmul(v[0], t(v[1])); };
    expect_gradients_match(mm_t, {input({4, 3}, 22), input({6, 3}, 23)}, "A @ B^T (a Linear layer)");
    const auto mm_tt = [](const std::vector<Tensor>& v) { return matmul(t(v[0]), t(v[1])); };
    expect_gradients_match(mm_tt, {input({3, 4}, 24), input({5, 3}, 25)}, "A^T @ B^T");
}

// ---- Task 4: relu, log-softmax, cross-entropy ------------------------------------------

TEST(Lab01, ReluBackward) {
    // Values kept away from 0, where relu has no derivative and finite differences lie.
    Rng rng(26);
    Tensor x = rand_uniform({4, 5}, 0.1, 2.0, rng, DType::Float64);
    double* p = x.data<double>();
    for (std::int64_t i = 0; i < x.numel(); i += 2) p[i] = -p[i];
    x.set_requires_grad();
    expect_gradients_match([](const std::vector<Tensor>& v) { return relu(v[0]); }, {x}, "relu");
}

TEST(Lab01, LogSoftmaxBackward) {
    const auto ls = [](const std::vector<Tensor>& v) { return log_softmax(v[0]); };
    expect_gradients_match(ls, {input({3, 4}, 27)}, "log_softmax [3,4]");
    expect_gradients_match(ls, {input({1, 1}, 28)}, "log_softmax [1,1]");
    expect_gradients_match(ls, {input({2, 10}, 29, 50.0, 60.0)}, "log_softmax of large logits");
}

TEST(Lab01, CrossEntropyBackward) {
    const Tensor targets = from_vector<std::int32_t>({2, 0, 3, 3, 1}, {5});
    const auto ce = [&](const std::vector<Tensor>& v) { return cross_entropy(v[0], targets); };
    expect_gradients_match(ce, {input({5, 4}, 30)}, "cross_entropy [5,4]");
    // The closed form: (softmax - onehot) / batch.
    Tensor logits = from_vector<double>({1.0, 2.0, 3.0, 1.0, 1.0, 1.0}, {2, 3}).set_requires_grad();
    cross_entropy(logits, from_vector<std::int32_t>({2, 0}, {2})).backward();
    ASSERT_TRUE(logits.grad().defined());
    const double e = std::exp(1.0) + std::exp(2.0) + std::exp(3.0);
    EXPECT_NEAR(logits.grad().at({0, 2}), (std::exp(3.0) / e - 1.0) / 2.0, 1e-12);
    EXPECT_NEAR(logits.grad().at({1, 0}), (1.0 / 3.0 - 1.0) / 2.0, 1e-12);
    EXPECT_NEAR(logits.grad().at({1, 1}), (1.0 / 3.0) / 2.0, 1e-12);
}

// ---- Putting it together --------------------------------------------------------------

TEST(Lab01, TwoLayerNetworkGradients) {
    const Tensor targets = from_vector<std::int32_t>({1, 0, 2}, {3});
    const auto net = [&](const std::vector<Tensor>& v) {
        const Tensor h = relu(matmul(v[0], t(v[1])) + v[2]);
        return cross_entropy(matmul(h, t(v[3])) + v[4], targets);
    };
    expect_gradients_match(net, {input({3, 6}, 31), input({5, 6}, 32), input({5}, 33), input({3, 5}, 34), input({3}, 35)},
                           "x -> Linear -> ReLU -> Linear -> cross-entropy");
}

TEST(Lab01, DataDependentControlFlowTrains) {
    const training::ToyTrainResult r = training::train_data_dependent_net(7);
    EXPECT_NE(r.min_depth, r.max_depth) << "different batches should have run graphs of different depth";
    EXPECT_LT(r.last_loss, 0.5 * r.first_loss) << "the loss should at least halve in 300 SGD steps";
    EXPECT_GE(r.accuracy, 0.9);
}

TEST(Lab01, SimpleNetLearnsFashionMnist) {
    // Your autograd inside the whole framework: SimpleNet on 12,000 training images for
    // 2 epochs should already classify most of 2,000 test images.
    std::shared_ptr<const Dataset> full;
    try {
        full = std::make_shared<MnistDataset>(default_fashion_mnist_dir(), MnistSplit::Train);
    } catch (const Error& e) {
        FAIL() << "Fashion-MNIST is needed for this test (./gradlab setup installs it): " << e.what();
    }
    const auto train = SubsetDataset::first(full, 12000);
    const MnistDataset test_full(default_fashion_mnist_dir(), MnistSplit::Test);
    std::vector<std::size_t> first_2000(2000);
    for (std::size_t i = 0; i < first_2000.size(); ++i) first_2000[i] = i;
    const SubsetDataset test(std::make_shared<MnistDataset>(test_full), first_2000);
    Rng rng(0);
    auto net = nn::make_simple_net(rng);
    training::FitOptions options;
    options.epochs = 2;
    const auto reports = training::fit(*net, train, &test, options);
    EXPECT_LT(reports.back().train_loss, reports.front().train_loss) << "the training loss should fall";
    EXPECT_GE(reports.back().test.accuracy, 0.80) << "SimpleNet should reach 0.80 test accuracy on this subset";
}

}  // namespace
}  // namespace gl
