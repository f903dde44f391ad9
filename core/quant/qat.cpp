// Quantization-aware training: fake quantization in the forward pass, the
// straight-through estimator in the backward (ops/fake_quant.hpp).
#include "quant/qat.hpp"

#include "autograd/grad_mode.hpp"
#include "base/error.hpp"
#include "ops/fake_quant.hpp"
#include "ops/ops.hpp"

namespace gl::quant {

QatLinear::QatLinear(const nn::Linear& linear, bool per_channel_weights) : per_channel(per_channel_weights) {
    weight = register_parameter("weight", linear.weight);
    if (linear.bias.defined()) bias = register_parameter("bias", linear.bias);
}

QParams QatLinear::input_params() const { return input_observer_.qparams(kUint8, QScheme::Asymmetric)[0]; }

std::vector<QParams> QatLinear::weight_params() const {
    const std::vector<float> w = weight.contiguous().to_vector<float>();
    MinMaxObserver range(per_channel ? weight.shape()[0] : 1);
    range.observe(w.data(), static_cast<std::int64_t>(w.size()));
    return range.qparams(kInt8, QScheme::Symmetric);
}

Tensor QatLinear::forward(const Tensor& x) {
    if (is_training()) {  // the observer watches the values, not the graph
        const std::vector<float> v = x.contiguous().to_vector<float>();
        input_observer_.observe(v.data(), static_cast<std::int64_t>(v.size()));
    }
    const Tensor xq = fake_quantize(x, {input_params()}, kUint8);
    const Tensor wq = fake_quantize(weight, weight_params(), kInt8);
    const Tensor y = matmul(xq, t(wq));
    return bias.defined() ? y + bias : y;
}

std::string QatLinear::describe() const {
    return "QatLinear(" + std::to_string(weight.shape()[1]) + " -> " + std::to_string(weight.shape()[0]) + ")";
}

std::shared_ptr<nn::Sequential> prepare_qat(const nn::Sequential& model, bool per_channel) {
    auto qat = std::make_shared<nn::Sequential>();
    for (const auto& [linear, relu] : linear_relu_chain(model)) {
        qat->add(std::make_shared<QatLinear>(*linear, per_channel));
        if (relu) qat->add(std::make_shared<nn::ReLU>());
    }
    return qat;
}

QuantizedMlp convert_qat(const nn::Sequential& qat_model) {
    std::vector<std::pair<QatLinear*, bool>> chain;
    for (std::size_t i = 0; i < qat_model.size(); ++i) {
        nn::Module& m = qat_model.at(i);
        if (auto* q = dynamic_cast<QatLinear*>(&m)) chain.emplace_back(q, false);
        else if (dynamic_cast<nn::ReLU*>(&m) && !chain.empty()) chain.back().second = true;
        else throw Error("convert_qat: module " + std::to_string(i) + " (" + m.describe() + ") did not come from prepare_qat");
    }
    check(!chain.empty(), "convert_qat: the model has no QatLinear layer");
    QuantizedMlp out;
    for (std::size_t l = 0; l < chain.size(); ++l) {
        const QatLinear& q = *chain[l].first;
        const bool has_output = l + 1 < chain.size();
        const QParams output = has_output ? chain[l + 1].first->input_params() : QParams{};
        out.layers.push_back(quantize_linear(q.weight, q.bias, q.input_params(), chain[l].second, has_output, output, q.per_channel));
    }
    return out;
}

}  // namespace gl::quant
