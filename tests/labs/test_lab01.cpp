// Lab 01 graded tests: the backward of each op and the backward walk.
// Points per test are in labs/01-autograd/rubric.json. Every check compares the
// student's backward with central finite differences in float64 (gradcheck).
//
// The student's code is called only inside graded::student (tests/labs/graded.hpp): the
// grader records what it returns in a sandbox and replays it into this program built from
// the reference, where the checks (finite differences of the reference forward, the
// graph's structure, the trained network's accuracy) decide.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "autograd/engine.hpp"
#include "data/mnist.hpp"
#include "autograd/gradcheck.hpp"
#include "ops/ops.hpp"
#include "training/toy_models.hpp"
#include "training/trainer.hpp"
#include "graded.hpp"

namespace gl {
namespace {

Tensor input(const Shape& shape, std::uint64_t seed, double lo = -2.0, double hi = 2.0) {
    Rng rng(seed);
    return rand_uniform(shape, lo, hi, rng, DType::Float64).set_requires_grad();
}

// The student's backward gives the gradients; finite differences check them.
void expect_gradients_match(const std::function<Tensor(const std::vector<Tensor>&)>& fn,
                            const std::vector<Tensor>& inputs, const std::string& what) {
    const auto grads = graded::student<std::vector<Tensor>>(what, [&] { return analytic_gradients(fn, inputs); });
    const GradcheckResult r = compare_with_finite_differences(fn, inputs, grads);
    EXPECT_TRUE(r.ok) << what << ": " << r.message;
}

// Every node reachable from @p root, in a fixed order that depends only on the graph's
// shape (depth first, inputs in order): it names nodes across processes, where pointers
// mean nothing.
std::vector<Node*> numbered_nodes(Node* root) {
    std::vector<Node*> nodes;
    std::set<Node*> seen;
    std::vector<Node*> stack{root};
    while (!stack.empty()) {
        Node* n = stack.back();
        stack.pop_back();
        if (!n || !seen.insert(n).second) continue;
        nodes.push_back(n);
        for (auto it = n->next.rbegin(); it != n->next.rend(); ++it) stack.push_back(it->get());
    }
    return nodes;
}

// The student's topological_order from @p root, as numbers of numbered_nodes(root)
// (-1 for a node not in the graph).
std::vector<Node*> student_topological_order(Node* root) {
    const std::vector<Node*> nodes = numbered_nodes(root);
    const auto numbers = graded::student<std::vector<std::int64_t>>("topological_order", [&] {
        std::map<Node*, std::int64_t> number;
        for (std::size_t i = 0; i < nodes.size(); ++i) number[nodes[i]] = static_cast<std::int64_t>(i);
        std::vector<std::int64_t> out;
        for (Node* n : topological_order(root)) out.push_back(number.count(n) ? number[n] : -1);
        return out;
    });
    std::vector<Node*> order;
    for (const auto i : numbers) {
        if (i < 0 || i >= static_cast<std::int64_t>(nodes.size())) {
            ADD_FAILURE() << "topological_order returned a node that is not in the graph";
            return {};
        }
        order.push_back(nodes[static_cast<std::size_t>(i)]);
    }
    return order;
}

// ---- Task 1: the backward walk --------------------------------------------------------

TEST(Lab01, TopologicalOrderPutsEveryNodeBeforeItsInputs) {
    // A diamond: x feeds a and b, both feed c.
    Tensor x = input({2, 2}, 1);
    Tensor a = relu(x);
    Tensor b = x * 3.0;
    Tensor c = a + b;
    Tensor loss = sum(c);
    const std::vector<Node*> order = student_topological_order(loss.grad_fn().get());
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
    const std::vector<Node*> order = student_topological_order(h.grad_fn().get());
    ASSERT_EQ(order.size(), 20001u) << "20,000 scale nodes and one leaf accumulator";
    // A chain has one order: from the root down.
    EXPECT_EQ(order, numbered_nodes(h.grad_fn().get())) << "the chain's nodes are out of order";
}

TEST(Lab01, BackwardWalkSumsGradientsFromSeveralPaths) {
    // y = x*x + x uses x three times: dy/dx = 2x + 1.
    const Tensor grad = graded::student<Tensor>("x.grad", [] {
        Tensor x = from_vector<double>({-1.5, 0.5, 2.0}, {3}).set_requires_grad();
        sum(x * x + x).backward();
        return x.grad();
    });
    ASSERT_TRUE(grad.defined()) << "no gradient reached the leaf x";
    ASSERT_EQ(grad.shape(), (Shape{3}));
    const std::vector<double> g = grad.to_vector<double>();
    EXPECT_DOUBLE_EQ(g[0], -2.0);
    EXPECT_DOUBLE_EQ(g[1], 2.0);
    EXPECT_DOUBLE_EQ(g[2], 5.0);
}

TEST(Lab01, BackwardWalkAccumulatesAcrossCalls) {
    const Tensor grad = graded::student<Tensor>("x.grad", [] {
        Tensor x = from_vector<double>({1.0, 2.0}, {2}).set_requires_grad();
        sum(x * 3.0).backward();
        sum(x * 3.0).backward();
        return x.grad();
    });
    ASSERT_TRUE(grad.defined());
    ASSERT_EQ(grad.shape(), (Shape{2}));
    EXPECT_EQ(grad.to_vector<double>(), (std::vector<double>{6.0, 6.0}))
        << "two backward calls must add their gradients into the leaf";
}

// ---- Task 2: add with broadcasting ----------------------------------------------------

TEST(Lab01, SumToReducesBroadcastAxes) {
    Rng rng(3);
    const Tensor g = rand_uniform({2, 3, 4}, -1, 1, rng, DType::Float64);
    const auto r = graded::student<std::vector<Tensor>>("sum_to", [&] {
        return std::vector<Tensor>{sum_to(g, {4}), sum_to(g, {3, 1}), sum_to(g, {2, 3, 4}), sum_to(g, {})};
    });
    ASSERT_EQ(r.size(), 4u);
    ASSERT_EQ(r[0].shape(), (Shape{4}));
    const Tensor expected1 = sum(g, {0, 1});
    for (std::int64_t i = 0; i < 4; ++i) EXPECT_NEAR(r[0].at({i}), expected1.at({i}), 1e-12);
    ASSERT_EQ(r[1].shape(), (Shape{3, 1}));
    const Tensor expected = sum(g, {0, 2}, true);
    for (std::int64_t i = 0; i < 3; ++i) EXPECT_NEAR(r[1].at({i, 0}), expected.at({0, i, 0}), 1e-12);
    ASSERT_EQ(r[2].shape(), (Shape{2, 3, 4}));
    EXPECT_EQ(r[2].to_vector<double>(), g.to_vector<double>()) << "sum_to to the same shape must change nothing";
    ASSERT_EQ(r[3].numel(), 1);
    EXPECT_NEAR(r[3].item(), sum(g).item(), 1e-12);
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
    const Tensor grad = graded::student<Tensor>("closed form", [] {
        Tensor logits = from_vector<double>({1.0, 2.0, 3.0, 1.0, 1.0, 1.0}, {2, 3}).set_requires_grad();
        cross_entropy(logits, from_vector<std::int32_t>({2, 0}, {2})).backward();
        return logits.grad();
    });
    ASSERT_TRUE(grad.defined());
    ASSERT_EQ(grad.shape(), (Shape{2, 3}));
    const double e = std::exp(1.0) + std::exp(2.0) + std::exp(3.0);
    EXPECT_NEAR(grad.at({0, 2}), (std::exp(3.0) / e - 1.0) / 2.0, 1e-12);
    EXPECT_NEAR(grad.at({1, 0}), (1.0 / 3.0 - 1.0) / 2.0, 1e-12);
    EXPECT_NEAR(grad.at({1, 1}), (1.0 / 3.0) / 2.0, 1e-12);
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
    // The checker believes these numbers (tests/labs/README.md: what stays forgeable).
    const auto [first_loss, last_loss, accuracy, min_depth, max_depth] =
        graded::student<std::tuple<double, double, double, int, int>>("train", [] {
            const training::ToyTrainResult t = training::train_data_dependent_net(7);
            return std::tuple{t.first_loss, t.last_loss, t.accuracy, t.min_depth, t.max_depth};
        });
    const training::ToyTrainResult r{first_loss, last_loss, accuracy, min_depth, max_depth};
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
    // The student's autograd trains; the trained weights are recorded, and the checker
    // evaluates them itself (forward only) on the training and the test images.
    Rng rng(0);
    auto net = nn::make_simple_net(rng);
    const training::EvalResult before = training::evaluate(*net, *train);
    const auto trained = graded::student<std::vector<Tensor>>("trained weights", [&] {
        training::FitOptions options;
        options.epochs = 2;
        training::fit(*net, train, &test, options);
        std::vector<Tensor> weights;
        for (const Tensor& p : net->parameters()) weights.push_back(p.detach().clone());
        return weights;
    });
    const std::vector<Tensor> params = net->parameters();
    ASSERT_EQ(trained.size(), params.size()) << "the trained network has a different number of parameters";
    for (std::size_t i = 0; i < params.size(); ++i) {
        ASSERT_EQ(trained[i].shape(), params[i].shape()) << "parameter " << i << " changed its shape";
        ASSERT_EQ(trained[i].dtype(), params[i].dtype()) << "parameter " << i << " changed its type";
        Tensor(params[i]).set_data(trained[i]);
    }
    const training::EvalResult after_train = training::evaluate(*net, *train);
    const training::EvalResult after_test = training::evaluate(*net, test);
    EXPECT_LT(after_train.loss, 0.5 * before.loss) << "the training loss should fall (at least halve)";
    EXPECT_GE(after_test.accuracy, 0.80) << "SimpleNet should reach 0.80 test accuracy on this subset";
}

}  // namespace
}  // namespace gl
