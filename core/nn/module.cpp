#include "nn/module.hpp"

#include <cmath>

#include "memory/tracking_allocator.hpp"
#include "nn/conv_layers.hpp"
#include "ops/conv.hpp"
#include "ops/ops.hpp"

namespace gl::nn {

std::vector<std::pair<std::string, Tensor>> Module::named_parameters() const {
    std::vector<std::pair<std::string, Tensor>> out = params_;
    for (const auto& [child_name, child] : children_)
        for (auto& [name, p] : child->named_parameters()) out.emplace_back(child_name + "." + name, p);
    return out;
}

std::vector<Tensor> Module::parameters() const {
    std::vector<Tensor> out;
    for (auto& [name, p] : named_parameters()) out.push_back(p);
    return out;
}

std::int64_t Module::parameter_count() const {
    std::int64_t n = 0;
    for (const auto& p : parameters()) n += p.numel();
    return n;
}

void Module::to(Device device) {
    for (Tensor& p : parameters())
        if (p.device() != device) p.set_data(p.to(device));
}

void Module::train(bool on) {
    training_ = on;
    for (auto& [name, child] : children_) child->train(on);
}

Tensor Module::register_parameter(const std::string& name, Tensor value) {
    value.set_requires_grad(true);
    memory::tag_memory(value, memory::MemoryCategory::Parameter);
    params_.emplace_back(name, value);
    return value;
}

void Module::register_module(const std::string& name, std::shared_ptr<Module> module) {
    check(module != nullptr, "register_module: module '" + name + "' is null");
    children_.emplace_back(name, std::move(module));
}

void kaiming_uniform_(Tensor& w, Rng& rng) {
    check(w.dim() == 2, "kaiming_uniform_: expects a [out, in] weight");
    const double bound = std::sqrt(6.0 / static_cast<double>(w.shape()[1]));
    const Tensor fresh = rand_uniform(w.shape(), -bound, bound, rng, w.dtype());
    std::copy_n(fresh.data<float>(), w.numel(), w.data<float>());
}

Linear::Linear(std::int64_t in, std::int64_t out, Rng& rng, bool with_bias) {
    check(in > 0 && out > 0, "Linear: feature counts must be positive, got " + std::to_string(in) +
                                 " -> " + std::to_string(out));
    Tensor w = empty({out, in});
    kaiming_uniform_(w, rng);
    weight = register_parameter("weight", w);
    if (with_bias) bias = register_parameter("bias", zeros({out}));
}

Tensor Linear::forward(const Tensor& x) {
    check(x.dim() == 2 && x.shape()[1] == weight.shape()[1], [&] {
        return "Linear(" + std::to_string(weight.shape()[1]) + " -> " + std::to_string(weight.shape()[0]) +
               "): expected input [batch, " + std::to_string(weight.shape()[1]) + "], got " + shape_str(x.shape());
    });
    const Tensor y = matmul(x, t(weight));  // [B, in] x [in, out]: W^T is a view, not a copy
    // With 16-bit working weights (mixed precision) the bias is widened to y's type.
    return bias.defined() ? y + cast(bias, y.dtype()) : y;
}

std::string Linear::describe() const {
    return "Linear(" + std::to_string(weight.shape()[1]) + " -> " + std::to_string(weight.shape()[0]) + ")";
}

Tensor ReLU::forward(const Tensor& x) { return relu(x); }

Sequential::Sequential(std::vector<std::shared_ptr<Module>> modules) {
    for (auto& m : modules) add(std::move(m));
}

Sequential& Sequential::add(std::shared_ptr<Module> module) {
    register_module(std::to_string(modules_.size()), module);
    modules_.push_back(std::move(module));
    return *this;
}

Tensor Sequential::forward(const Tensor& x) {
    Tensor h = x;
    for (std::size_t i = 0; i < modules_.size(); ++i) {
        const auto* relu_layer = dynamic_cast<const ReLU*>(modules_[i].get());
        const auto* pool = i + 1 < modules_.size() ? dynamic_cast<const MaxPool2d*>(modules_[i + 1].get()) : nullptr;
        if (fusion_ && relu_layer && pool) {  // ReLU then MaxPool2d: one op, both modules
            h = relu_max_pool2d(h, pool->kernel(), pool->stride());
            ++i;
            continue;
        }
        h = modules_[i]->forward(h);
    }
    return h;
}

std::string Sequential::describe() const {
    std::string s = "Sequential(";
    for (std::size_t i = 0; i < modules_.size(); ++i) s += (i ? ", " : "") + modules_[i]->describe();
    return s + ")";
}

Tensor CrossEntropyLoss::operator()(const Tensor& logits, const Tensor& targets) const {
    return cross_entropy(logits, targets);
}

std::shared_ptr<Sequential> make_simple_net(Rng& rng, std::int64_t in, std::int64_t hidden,
                                            std::int64_t classes) {
    auto net = std::make_shared<Sequential>();
    net->add(std::make_shared<Linear>(in, hidden, rng));
    net->add(std::make_shared<ReLU>());
    net->add(std::make_shared<Linear>(hidden, classes, rng));
    return net;
}

}  // namespace gl::nn
