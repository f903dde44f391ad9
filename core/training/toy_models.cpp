#include "training/toy_models.hpp"

#include <algorithm>

#include "optim/optimizer.hpp"

namespace gl::training {

Blobs make_blobs(std::int64_t n, std::int64_t dims, std::uint64_t seed) {
    Rng rng(seed);
    Tensor x = empty({n, dims});
    Tensor y = empty({n}, DType::Int32);
    float* px = x.data<float>();
    std::int32_t* py = y.data<std::int32_t>();
    for (std::int64_t i = 0; i < n; ++i) {
        const int label = static_cast<int>(i % 2);
        py[i] = label;
        for (std::int64_t d = 0; d < dims; ++d)
            px[i * dims + d] = static_cast<float>((label ? 1.0 : -1.0) + 0.7 * rng.normal());
    }
    return {x, y};
}

Blobs make_xor(std::int64_t n, std::uint64_t seed) {
    Rng rng(seed);
    Tensor x = empty({n, 2});
    Tensor y = empty({n}, DType::Int32);
    float* px = x.data<float>();
    std::int32_t* py = y.data<std::int32_t>();
    for (std::int64_t i = 0; i < n; ++i) {
        px[2 * i] = static_cast<float>(rng.uniform(-1, 1));
        px[2 * i + 1] = static_cast<float>(rng.uniform(-1, 1));
        py[i] = px[2 * i] * px[2 * i + 1] > 0 ? 1 : 0;
    }
    return {x, y};
}

DataDependentNet::DataDependentNet(std::int64_t dims, Rng& rng)
    : in_(std::make_shared<nn::Linear>(dims, 16, rng)),
      step_(std::make_shared<nn::Linear>(16, 16, rng)),
      out_(std::make_shared<nn::Linear>(16, 2, rng)) {
    register_module("in", in_);
    register_module("step", step_);
    register_module("out", out_);
}

int DataDependentNet::depth_for(const Tensor& x) {
    // Ordinary C++ on a number computed from the data: batches differ, so depths differ.
    const double energy = mean(x * x).item();
    return 1 + static_cast<int>(10.0 * energy) % 4;
}

Tensor DataDependentNet::forward(const Tensor& x) {
    Tensor h = relu((*in_)(x));
    last_depth = depth_for(x);
    for (int step = 0; step < last_depth; ++step) h = h + relu((*step_)(h)) * 0.5;
    return (*out_)(h);
}

ToyTrainResult train_data_dependent_net(std::uint64_t seed, int steps) {
    Rng rng(seed);
    const Blobs data = make_xor(256, seed + 1);
    DataDependentNet net(2, rng);
    optim::SGD opt(net.parameters(), 0.05, 0.9);
    ToyTrainResult r{0, 0, 0, 99, 0};
    r.first_loss = cross_entropy(net(data.x), data.y).item();
    const std::int64_t batch = 16;
    std::vector<std::size_t> order;
    for (int s = 0; s < steps; ++s) {
        if (order.empty()) order = rng.permutation(256);
        // Gather a mini-batch of 16 random points.
        Tensor xb = empty({batch, 2});
        Tensor yb = empty({batch}, DType::Int32);
        for (std::int64_t i = 0; i < batch; ++i) {
            const auto j = static_cast<std::int64_t>(order.back());
            order.pop_back();
            xb.data<float>()[2 * i] = data.x.data<float>()[2 * j];
            xb.data<float>()[2 * i + 1] = data.x.data<float>()[2 * j + 1];
            yb.data<std::int32_t>()[i] = data.y.data<std::int32_t>()[j];
        }
        opt.zero_grad();
        cross_entropy(net(xb), yb).backward();
        opt.step();
        r.min_depth = std::min(r.min_depth, net.last_depth);
        r.max_depth = std::max(r.max_depth, net.last_depth);
    }
    const Tensor logits = net(data.x);
    r.last_loss = cross_entropy(logits, data.y).item();
    const Tensor pred = argmax(logits);
    std::int64_t correct = 0;
    for (std::int64_t i = 0; i < pred.numel(); ++i)
        correct += pred.data<std::int32_t>()[i] == data.y.data<std::int32_t>()[i];
    r.accuracy = static_cast<double>(correct) / static_cast<double>(pred.numel());
    return r;
}

}  // namespace gl::training
