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

DataDependentNet::DataDependentNet(std::int64_t dims, Rng& rng)
    : in_(std::make_shared<nn::Linear>(dims, 16, rng)),
      step_(std::make_shared<nn::Linear>(16, 16, rng)),
      out_(std::make_shared<nn::Linear>(16, 2, rng)) {
    register_module("in", in_);
    register_module("step", step_);
    register_module("out", out_);
}

Tensor DataDependentNet::forward(const Tensor& x) {
    Tensor h = relu((*in_)(x));
    last_depth = 0;
    // Ordinary C++ control flow on a value computed from the data.
    while (last_depth < 4 && mean(h).item() < 0.8) {
        h = h + relu((*step_)(h)) * 0.5;
        ++last_depth;
    }
    return (*out_)(h);
}

ToyTrainResult train_data_dependent_net(std::uint64_t seed, int steps) {
    Rng rng(seed);
    const Blobs data = make_blobs(128, 4, seed + 1);
    DataDependentNet net(4, rng);
    optim::SGD opt(net.parameters(), 0.1, 0.9);
    ToyTrainResult r{0, 0, 0, 99, 0};
    for (int s = 0; s < steps; ++s) {
        opt.zero_grad();
        const Tensor loss = cross_entropy(net(data.x), data.y);
        loss.backward();
        opt.step();
        if (s == 0) r.first_loss = loss.item();
        r.last_loss = loss.item();
        r.min_depth = std::min(r.min_depth, net.last_depth);
        r.max_depth = std::max(r.max_depth, net.last_depth);
    }
    const Tensor pred = argmax(net(data.x));
    std::int64_t correct = 0;
    for (std::int64_t i = 0; i < pred.numel(); ++i)
        correct += pred.data<std::int32_t>()[i] == data.y.data<std::int32_t>()[i];
    r.accuracy = static_cast<double>(correct) / static_cast<double>(pred.numel());
    return r;
}

}  // namespace gl::training
