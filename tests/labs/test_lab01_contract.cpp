// Lab 01 contract tests: each graded backward over its whole contract. Incoming gradients that are
// strided views or hold infinities and NaNs where the op blocks them; a loss that is not the root
// (a scaled cross-entropy); sum_to on random broadcast shapes; matmul when only one operand wants a
// gradient; the backward walk when one gradient tensor reaches two nodes; topological order on
// random graphs with shared nodes. The student's code is called only through graded::student
// (graded.hpp), each call one small lambda that returns everything the checks read, so a checker
// that never loads it can decide.
#include <gtest/gtest.h>

#include <pthread.h>

#include <cmath>
#include <exception>
#include <functional>
#include <stdexcept>
#include <limits>
#include <map>
#include <set>

#include "autograd/engine.hpp"
#include "contract.hpp"
#include "graded.hpp"
#include "ops/ops.hpp"

namespace gl {
namespace {

std::vector<double> values(const Tensor& t) { return t.defined() ? to_dtype(t, DType::Float64).to_vector<double>() : std::vector<double>{}; }

TEST(Lab01, ContractReluBackwardBlocksSpecialGradients) {
    // The gradient reaching relu is c; where the unit is off (y = 0) it must be exactly 0,
    // whatever c holds there: infinity and NaN too.
    const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
    auto run = [&]() -> std::vector<double> {
        Tensor x = from_vector<double>({-2.0, 0.0, 3.0, -1.0, 5.0, -0.5}, {6}).set_requires_grad();
        const Tensor c = from_vector<double>({inf, nan, 2.0, -inf, 3.0, nan}, {6});
        sum(mul(relu(x), c)).backward();
        return values(x.grad());
    };
    EXPECT_EQ(graded::student<std::vector<double>>("relu: x.grad", run), (std::vector<double>{0, 0, 2, 0, 3, 0}))
        << "relu backward: pass the gradient where y > 0 and exactly 0 elsewhere (inf * 0 is NaN: select, do not multiply)";
}

TEST(Lab01, ContractLogSoftmaxBackwardOfAStridedGradient) {
    // sum(t(y) * W): the gradient reaching log_softmax is t(W), a transposed view.
    Rng rng(11);
    for (const auto& [rows, cols] : std::vector<std::pair<std::int64_t, std::int64_t>>{{3, 4}, {5, 2}, {1, 7}}) {
        const Tensor xv = rand_uniform({rows, cols}, -2, 2, rng, DType::Float64);
        const Tensor w = rand_uniform({cols, rows}, -1, 1, rng, DType::Float64);
        auto run = [&]() -> std::vector<double> {
            Tensor x = xv.detach().set_requires_grad();
            sum(mul(t(log_softmax(x)), w)).backward();
            return values(x.grad());
        };
        const std::vector<double> got = graded::student<std::vector<double>>("log_softmax: x.grad", run);
        ASSERT_EQ(got.size(), static_cast<std::size_t>(rows * cols)) << "no gradient reached x";
        const std::vector<double> xs = values(xv), ws = values(w);
        for (std::int64_t r = 0; r < rows; ++r) {
            double max = -1e300, z = 0, gsum = 0;
            for (std::int64_t j = 0; j < cols; ++j) max = std::max(max, xs[r * cols + j]);
            for (std::int64_t j = 0; j < cols; ++j) z += std::exp(xs[r * cols + j] - max), gsum += ws[j * rows + r];
            for (std::int64_t j = 0; j < cols; ++j) {
                const double want = ws[j * rows + r] - std::exp(xs[r * cols + j] - max) / z * gsum;
                ASSERT_NEAR(got[r * cols + j], want, 1e-9)
                    << "log_softmax [" << rows << "," << cols << "] backward of a strided gradient, x.grad(" << r << ", "
                    << j << "): read the incoming gradient by its strides (or make it contiguous)";
            }
        }
    }
}

TEST(Lab01, ContractCrossEntropyBackwardOfAScaledLoss) {
    // loss = 3.5 * cross_entropy: the incoming gradient is 3.5, not 1.
    Rng rng(12);
    const Tensor xv = rand_uniform({4, 5}, -2, 2, rng, DType::Float64);
    const Tensor targets = from_vector<std::int32_t>({1, 4, 0, 1}, {4});
    auto run = [&]() -> std::vector<double> {
        Tensor x = xv.detach().set_requires_grad();
        mul(cross_entropy(x, targets), 3.5).backward();
        return values(x.grad());
    };
    const std::vector<double> got = graded::student<std::vector<double>>("cross_entropy: logits.grad", run);
    ASSERT_EQ(got.size(), 20u) << "no gradient reached the logits";
    const std::vector<double> xs = values(xv);
    const std::vector<int> tg{1, 4, 0, 1};
    for (int r = 0; r < 4; ++r) {
        double z = 0;
        for (int j = 0; j < 5; ++j) z += std::exp(xs[r * 5 + j]);
        for (int j = 0; j < 5; ++j) {
            const double want = 3.5 * (std::exp(xs[r * 5 + j]) / z - (j == tg[static_cast<std::size_t>(r)] ? 1 : 0)) / 4;
            ASSERT_NEAR(got[static_cast<std::size_t>(r * 5 + j)], want, 1e-9)
                << "cross_entropy backward under a scaled loss, logits.grad(" << r << ", " << j
                << "): multiply by the incoming gradient";
        }
    }
}

TEST(Lab01, ContractSumToOnRandomBroadcastShapes) {
    Rng rng(13);
    for (int trial = 0; trial < 200; ++trial) {
        Shape grad_shape;
        const auto rank = labs::pick(rng, 1, 4);
        for (std::int64_t d = 0; d < rank; ++d) grad_shape.push_back(labs::pick(rng, 1, 4));
        const auto lead = labs::pick(rng, 0, rank);
        Shape shape;
        for (std::int64_t d = lead; d < rank; ++d) shape.push_back(rng.below(2) ? 1 : grad_shape[static_cast<std::size_t>(d)]);
        const Tensor g = rand_uniform(grad_shape, -1, 1, rng, DType::Float64);
        auto run = [&]() -> std::vector<double> {
            const Tensor r = sum_to(g, shape);
            if (r.shape() != shape) return {};
            return values(r.contiguous());
        };
        const std::vector<double> got = graded::student<std::vector<double>>("sum_to", run);
        // The sum by hand: every element of g lands on its broadcast source.
        std::size_t n = 1;
        for (auto e : shape) n *= static_cast<std::size_t>(e);
        std::vector<double> want(n, 0.0);
        const std::vector<double> gs = values(g);
        for (std::size_t flat = 0; flat < gs.size(); ++flat) {
            std::size_t rest = flat, target = 0, stride = 1;
            for (std::int64_t d = rank - 1; d >= 0; --d) {
                const auto extent = static_cast<std::size_t>(grad_shape[static_cast<std::size_t>(d)]);
                const std::size_t i = rest % extent;
                rest /= extent;
                if (d >= lead) {
                    const auto e = static_cast<std::size_t>(shape[static_cast<std::size_t>(d - lead)]);
                    target += (e == 1 ? 0 : i) * stride;
                    stride *= e;
                }
            }
            want[target] += gs[flat];
        }
        std::string from, to;
        for (auto e : grad_shape) from += std::to_string(e) + " ";
        for (auto e : shape) to += std::to_string(e) + " ";
        ASSERT_EQ(got.size(), want.size()) << "sum_to from [ " << from << "] to [ " << to << "]: wrong shape";
        for (std::size_t i = 0; i < want.size(); ++i)
            ASSERT_NEAR(got[i], want[i], 1e-12) << "sum_to from [ " << from << "] to [ " << to << "], element " << i
                                                << ": sum over leading axes and over axes of extent 1 in the target";
    }
}

TEST(Lab01, ContractMatmulBackwardWhenOneOperandNeedsAGradient) {
    Rng rng(14);
    const Tensor av = rand_uniform({3, 5}, -1, 1, rng, DType::Float64), bv = rand_uniform({5, 4}, -1, 1, rng, DType::Float64);
    const Tensor wv = rand_uniform({4, 5}, -1, 1, rng, DType::Float64), c = rand_uniform({3, 4}, -1, 1, rng, DType::Float64);
    // want: dA = C B^T, dB = A^T C (with C the incoming gradient).
    const std::vector<double> as = values(av), bs = values(bv), ws = values(wv), cs = values(c);
    auto expect_product = [](const std::vector<double>& got, std::size_t rows, std::size_t cols, auto element,
                             const std::string& what) {
        ASSERT_EQ(got.size(), rows * cols) << what << ": no gradient";
        for (std::size_t i = 0; i < rows; ++i)
            for (std::size_t j = 0; j < cols; ++j) ASSERT_NEAR(got[i * cols + j], element(i, j), 1e-12) << what << " (" << i << ", " << j << ")";
    };
    for (int which = 0; which < 3; ++which) {
        auto run = [&]() -> std::vector<double> {
            Tensor a = av.detach(), b = bv.detach(), w = wv.detach();
            if (which == 0) a.set_requires_grad();
            if (which == 1) b.set_requires_grad();
            if (which == 2) w.set_requires_grad();
            sum(mul(matmul(a, which == 2 ? t(w) : b), c)).backward();
            return values(which == 0 ? a.grad() : which == 1 ? b.grad() : w.grad());
        };
        const std::vector<double> got = graded::student<std::vector<double>>("matmul: the gradient", run);
        if (which == 0)
            expect_product(got, 3, 5, [&](std::size_t i, std::size_t k) {
                double s = 0;
                for (std::size_t j = 0; j < 4; ++j) s += cs[i * 4 + j] * bs[k * 4 + j];
                return s;
            }, "only A requires grad: A.grad");
        else
            expect_product(got, which == 1 ? 5 : 4, which == 1 ? 4 : 5, [&](std::size_t p, std::size_t q) {
                const std::size_t k = which == 1 ? p : q, j = which == 1 ? q : p;
                double s = 0;
                for (std::size_t i = 0; i < 3; ++i) s += as[i * 5 + k] * cs[i * 4 + j];
                return s;
            }, which == 1 ? "only B requires grad: B.grad" : "only W requires grad (B = t(W)): W.grad");
        (void)ws;
    }
}

TEST(Lab01, ContractBackwardWalkWhenOneGradientReachesTwoNodes) {
    // y = a + b hands the same gradient to a and b; a receives a second one as well. The
    // second must be added to a's gradient without changing b's.
    const std::vector<double> x{1.0, -2.0, 0.5}, c{0.5, 2.0, -1.0}, d{3.0, 1.0, 4.0};
    for (bool add_first : {true, false}) {
        auto run = [&]() -> std::vector<double> {
            Tensor w1 = from_vector<double>({2.0, 1.0, -1.0}, {3}).set_requires_grad();
            Tensor w2 = from_vector<double>({-1.0, 3.0, 0.5}, {3}).set_requires_grad();
            const Tensor xt = from_vector<double>(x, {3}), ct = from_vector<double>(c, {3}), dt = from_vector<double>(d, {3});
            const Tensor a = mul(xt, w1), b = mul(xt, w2);
            const Tensor via_y = sum(mul(add(a, b), ct)), via_a = sum(mul(a, dt));
            (add_first ? add(via_y, via_a) : add(via_a, via_y)).backward();
            std::vector<double> out = values(w1.grad());
            for (double v : values(w2.grad())) out.push_back(v);
            return out;
        };
        const std::vector<double> got = graded::student<std::vector<double>>("w1.grad, w2.grad", run);
        std::vector<double> want;
        for (std::size_t i = 0; i < 3; ++i) want.push_back(x[i] * (c[i] + d[i]));
        for (std::size_t i = 0; i < 3; ++i) want.push_back(x[i] * c[i]);
        EXPECT_EQ(got, want) << (add_first ? "y's path summed first" : "a's own path summed first")
                             << ": w1.grad = x (c + d), w2.grad = x c; sum gradients into a new tensor (add), "
                                "never in place into one that another node also received";
    }
}

TEST(Lab01, ContractBackwardWalkOnRandomGraphs) {
    // Random graphs of add and mul over three leaves, where many intermediate results feed
    // several later ones. The leaves' gradients are computed here by hand (reverse mode
    // over the op list), and must match the engine's exactly.
    Rng rng(16);
    for (int trial = 0; trial < 100; ++trial) {
        struct Op {
            int kind, lhs, rhs;  // kind 0: add, 1: mul; operands are earlier values
        };
        std::vector<Op> ops;
        const int leaves = 3, count = static_cast<int>(labs::pick(rng, 2, 14));
        for (int i = 0; i < count; ++i)
            ops.push_back({static_cast<int>(rng.below(2)), static_cast<int>(rng.below(static_cast<std::uint64_t>(leaves + i))),
                           static_cast<int>(rng.below(static_cast<std::uint64_t>(leaves + i)))});
        std::vector<double> leaf_values;
        for (int l = 0; l < leaves; ++l) leaf_values.push_back(std::round(rng.uniform(-2, 2) * 4) / 4);  // exact in binary
        // By hand: forward values, then the adjoints in reverse.
        std::vector<double> v = leaf_values;
        for (const Op& op : ops) v.push_back(op.kind == 0 ? v[op.lhs] + v[op.rhs] : v[op.lhs] * v[op.rhs]);
        std::vector<double> adj(v.size(), 0.0);
        adj.back() = 1.0;
        for (int i = count - 1; i >= 0; --i) {
            const Op& op = ops[static_cast<std::size_t>(i)];
            const double g = adj[static_cast<std::size_t>(leaves + i)];
            adj[op.lhs] += op.kind == 0 ? g : g * v[op.rhs];
            adj[op.rhs] += op.kind == 0 ? g : g * v[op.lhs];
        }
        auto run = [&]() -> std::vector<double> {
            std::vector<Tensor> t;
            for (double x : leaf_values) t.push_back(from_vector<double>({x}, {1}).set_requires_grad());
            for (const Op& op : ops) t.push_back(op.kind == 0 ? add(t[op.lhs], t[op.rhs]) : mul(t[op.lhs], t[op.rhs]));
            sum(t.back()).backward();
            std::vector<double> out;
            for (int l = 0; l < leaves; ++l) out.push_back(t[l].grad().defined() ? t[l].grad().item() : 0.0);
            return out;
        };
        const std::vector<double> got = graded::student<std::vector<double>>("leaf gradients", run);
        for (int l = 0; l < leaves; ++l)
            ASSERT_NEAR(got[static_cast<std::size_t>(l)], adj[static_cast<std::size_t>(l)], 1e-9 * (1 + std::abs(adj[l])))
                << "graph " << trial << " (" << count << " ops), leaf " << l
                << ": sum the gradients reaching a node into a new tensor; never add in place into one that "
                   "another node may hold too";
    }
}

// Runs fn on a thread whose stack is only @p bytes long; its exception is rethrown here.
void on_small_stack(std::size_t bytes, const std::function<void()>& fn) {
    struct Call {
        const std::function<void()>& fn;
        std::exception_ptr error;
    } call{fn, nullptr};
    const auto body = [](void* p) -> void* {
        auto* c = static_cast<Call*>(p);
        try {
            c->fn();
        } catch (...) {
            c->error = std::current_exception();
        }
        return nullptr;
    };
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, bytes);
    pthread_t thread;
    const int started = pthread_create(&thread, &attr, body, &call);
    pthread_attr_destroy(&attr);
    if (started != 0) throw std::runtime_error("could not start a thread");
    pthread_join(thread, nullptr);
    if (call.error) std::rethrow_exception(call.error);
}

TEST(Lab01, ContractTopologicalOrderOnASmallStack) {
    // A chain of 20,000 ops, ordered on a thread with a 256 KiB stack: an explicit stack
    // needs almost none of it, recursion overflows it (and crashes the test).
    const Tensor x = from_vector<double>({1.0}, {1}).set_requires_grad();
    Tensor h = x;
    for (int i = 0; i < 20000; ++i) h = h * 1.0;
    auto run = [&]() -> std::int64_t {
        std::int64_t n = -1;
        on_small_stack(256 << 10, [&] { n = static_cast<std::int64_t>(topological_order(h.grad_fn().get()).size()); });
        return n;
    };
    EXPECT_EQ(graded::student<std::int64_t>("topological_order on a small stack", run), 20001);
}

TEST(Lab01, ContractTopologicalOrderOnRandomGraphs) {
    Rng rng(15);
    for (int trial = 0; trial < 50; ++trial) {
        std::vector<Tensor> pool{from_vector<double>({1.0, 2.0}, {2}).set_requires_grad(),
                                 from_vector<double>({-1.0, 0.5}, {2}).set_requires_grad()};
        const auto ops = labs::pick(rng, 1, 30);
        for (std::int64_t i = 0; i < ops; ++i) {
            const Tensor& p = pool[rng.below(pool.size())];
            const Tensor& q = pool[rng.below(pool.size())];
            switch (rng.below(3)) {
                case 0: pool.push_back(add(p, q)); break;
                case 1: pool.push_back(mul(p, q)); break;
                default: pool.push_back(relu(p)); break;
            }
        }
        const Tensor root = sum(pool.back());
        // Every node reachable from the root, numbered in the order a plain search finds
        // them (the same numbers in the student's process and the checker's).
        std::vector<Node*> reachable;
        std::map<Node*, std::int64_t> number;
        std::vector<Node*> todo{root.grad_fn().get()};
        while (!todo.empty()) {
            Node* n = todo.back();
            todo.pop_back();
            if (!n || number.count(n)) continue;
            number[n] = static_cast<std::int64_t>(reachable.size());
            reachable.push_back(n);
            for (const auto& e : n->next) todo.push_back(e.get());
        }
        // The order as node numbers (-1 for a node that is not reachable).
        auto run = [&]() -> std::vector<std::int64_t> {
            std::vector<std::int64_t> out;
            for (Node* n : topological_order(root.grad_fn().get())) out.push_back(number.count(n) ? number[n] : -1);
            return out;
        };
        const std::vector<std::int64_t> order = graded::student<std::vector<std::int64_t>>("topological_order", run);
        std::vector<std::int64_t> all(reachable.size());
        for (std::size_t i = 0; i < all.size(); ++i) all[i] = static_cast<std::int64_t>(i);
        ASSERT_EQ(std::set<std::int64_t>(order.begin(), order.end()), std::set<std::int64_t>(all.begin(), all.end()))
            << "graph " << trial << ": every reachable node, and nothing else";
        ASSERT_EQ(order.size(), reachable.size()) << "graph " << trial << ": each node exactly once";
        for (std::size_t i = 0; i < order.size(); ++i)
            for (const auto& e : reachable[static_cast<std::size_t>(order[i])]->next)
                if (e) {
                    const auto pos = std::find(order.begin(), order.end(), number[e.get()]) - order.begin();
                    ASSERT_GT(pos, static_cast<std::ptrdiff_t>(i)) << "graph " << trial << ": a node comes after one of its inputs";
                }
    }
}

}  // namespace
}  // namespace gl
