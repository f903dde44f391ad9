#include "graph_fixtures.hpp"

#include <algorithm>
#include <cmath>

#include "ops/ops.hpp"
#include "optim/optimizer.hpp"

namespace gl::graph::fixtures {

int add_input(Graph& g, const std::string& name, const Shape& shape, ValueKind kind) {
    Value v;
    v.name = name;
    v.shape = shape;
    v.kind = kind;
    return g.add_value(v);
}

Batch random_batch(std::int64_t rows, std::int64_t features, std::int64_t classes, std::uint64_t seed) {
    Rng rng(seed);
    Batch b{randn({rows, features}, rng), empty({rows}, DType::Int32)};
    for (std::int64_t r = 0; r < rows; ++r)
        b.targets.data<std::int32_t>()[r] = static_cast<std::int32_t>(rng.below(static_cast<std::uint64_t>(classes)));
    return b;
}

std::shared_ptr<nn::Sequential> simple_net(std::uint64_t seed, std::int64_t in, std::int64_t hidden,
                                           std::int64_t classes) {
    Rng rng(seed);
    return nn::make_simple_net(rng, in, hidden, classes);
}

std::vector<double> train_eager(nn::Module& model, const AdamSettings& adam, int steps, std::int64_t rows,
                                std::int64_t features, std::int64_t classes, std::uint64_t seed) {
    optim::Adam opt(model.parameters(), adam.lr, adam.beta1, adam.beta2, adam.eps);
    std::vector<double> losses;
    for (int s = 0; s < steps; ++s) {
        const Batch b = random_batch(rows, features, classes, seed + static_cast<std::uint64_t>(s));
        opt.zero_grad();
        const Tensor loss = cross_entropy(model(b.x), b.targets);
        loss.backward();
        opt.step();
        losses.push_back(loss.item());
    }
    return losses;
}

int count_ops(const Graph& g, const std::string& op) {
    int n = 0;
    for (const Node& node : g.nodes) n += node.op == op;
    return n;
}

double max_parameter_difference(nn::Module& a, nn::Module& b) {
    const std::vector<Tensor> pa = a.parameters(), pb = b.parameters();
    double worst = 0.0;
    for (std::size_t i = 0; i < pa.size(); ++i)
        for (std::int64_t e = 0; e < pa[i].numel(); ++e)
            worst = std::max(worst, std::abs(static_cast<double>(pa[i].data<float>()[e]) - pb[i].data<float>()[e]));
    return worst;
}

}  // namespace gl::graph::fixtures
