// Quantization-aware training: fake quantization in the forward pass, the
// straight-through estimator in the backward (ops/fake_quant.hpp).
#include "quant/qat.hpp"

#include "autograd/grad_mode.hpp"
#include "base/error.hpp"
#include "ops/fake_quant.hpp"
#include "nn/conv_layers.hpp"
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

QatConv2d::QatConv2d(const nn::Conv2d& conv, bool per_channel_weights)
    : options(conv.options), per_channel(per_channel_weights) {
    weight = register_parameter("weight", conv.weight);
    if (conv.bias.defined()) bias = register_parameter("bias", conv.bias);
}

QParams QatConv2d::input_params() const { return input_observer_.qparams(kUint8, QScheme::Asymmetric)[0]; }

std::vector<QParams> QatConv2d::weight_params() const {
    const std::vector<float> w = weight.contiguous().to_vector<float>();
    MinMaxObserver range(per_channel ? weight.shape()[0] : 1);  // [K, C k k] rows: one per filter
    range.observe(w.data(), static_cast<std::int64_t>(w.size()));
    return range.qparams(kInt8, QScheme::Symmetric);
}

Tensor QatConv2d::forward(const Tensor& x) {
    if (is_training()) {
        const std::vector<float> v = x.contiguous().to_vector<float>();
        input_observer_.observe(v.data(), static_cast<std::int64_t>(v.size()));
    }
    const Tensor xq = fake_quantize(x, {input_params()}, kUint8);
    const Tensor wq = fake_quantize(weight, weight_params(), kInt8);  // per slice along dim 0: per filter
    return conv2d(xq, wq, bias, options);
}

std::string QatConv2d::describe() const {
    return "QatConv2d(" + std::to_string(weight.shape()[1]) + " -> " + std::to_string(weight.shape()[0]) + ", " +
           std::to_string(weight.shape()[2]) + "x" + std::to_string(weight.shape()[3]) + ")";
}

namespace {

// A CNN's QAT version: its modules in order, convolutions and Linears replaced.
std::shared_ptr<nn::Sequential> prepare_qat_cnn(const nn::Sequential& model, bool per_channel) {
    std::int64_t side = 0;
    const std::vector<QuantizableLayer> layers = cnn_layers(model, &read_float_layer, side);  // checks the shape
    auto qat = std::make_shared<nn::Sequential>();
    qat->add(std::make_shared<nn::ToImage>(side));
    for (std::size_t l = 0; l < layers.size(); ++l) {
        const QuantizableLayer& L = layers[l];
        nn::Module& m = model.at(L.module);
        if (L.conv) qat->add(std::make_shared<QatConv2d>(dynamic_cast<nn::Conv2d&>(m), per_channel));
        else qat->add(std::make_shared<QatLinear>(dynamic_cast<nn::Linear&>(m), per_channel));
        if (L.relu) qat->add(std::make_shared<nn::ReLU>());
        if (L.pool > 1) qat->add(std::make_shared<nn::MaxPool2d>(L.pool));
        if (L.conv && !layers[l + 1].conv) qat->add(std::make_shared<nn::Flatten>());  // cnn_layers: a Linear comes last
    }
    return qat;
}

// Reads the QAT layers of a prepare_qat CNN (cnn_layers' reader).
bool read_qat_layer(nn::Module& module, QuantizableLayer& layer) {
    if (auto* linear = dynamic_cast<QatLinear*>(&module)) {
        layer.conv = false;
        layer.weight = linear->weight;
        layer.bias = linear->bias;
        return true;
    }
    if (auto* conv = dynamic_cast<QatConv2d*>(&module)) {
        layer.conv = true;
        layer.weight = conv->weight;
        layer.bias = conv->bias;
        layer.stride = conv->options.stride[0];
        layer.padding = conv->options.padding[0];
        return true;
    }
    return false;
}

}  // namespace

std::shared_ptr<nn::Sequential> prepare_qat(const nn::Sequential& model, bool per_channel) {
    if (has_conv(model)) return prepare_qat_cnn(model, per_channel);
    auto qat = std::make_shared<nn::Sequential>();
    for (const auto& [linear, relu] : linear_relu_chain(model)) {
        qat->add(std::make_shared<QatLinear>(*linear, per_channel));
        if (relu) qat->add(std::make_shared<nn::ReLU>());
    }
    return qat;
}

QuantizedCnn convert_qat_cnn(const nn::Sequential& qat_model) {
    std::int64_t side = 0;
    const std::vector<QuantizableLayer> layers = cnn_layers(qat_model, &read_qat_layer, side);
    std::vector<QParams> inputs;
    bool per_channel = true;
    for (const QuantizableLayer& L : layers) {
        nn::Module& m = qat_model.at(L.module);
        if (auto* conv = dynamic_cast<QatConv2d*>(&m)) {
            inputs.push_back(conv->input_params());
            per_channel = conv->per_channel;
        } else {
            inputs.push_back(dynamic_cast<QatLinear&>(m).input_params());
        }
    }
    return build_quantized_cnn(layers, inputs, side, per_channel);
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
