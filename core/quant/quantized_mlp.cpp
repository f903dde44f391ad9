// Post-training quantization of a Linear/ReLU chain and its integer-only forward pass.
#include "quant/quantized_mlp.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>

#include "autograd/grad_mode.hpp"
#include "base/error.hpp"
#include "kernels/gemm_int8.hpp"
#include "numerics/observer.hpp"
#include "ops/ops.hpp"
#include "parallel/thread_pool.hpp"

namespace gl::quant {

std::vector<std::pair<nn::Linear*, bool>> linear_relu_chain(const nn::Sequential& model) {
    std::vector<std::pair<nn::Linear*, bool>> chain;
    for (std::size_t i = 0; i < model.size(); ++i) {
        nn::Module& m = model.at(i);
        if (auto* linear = dynamic_cast<nn::Linear*>(&m)) {
            chain.emplace_back(linear, false);
        } else if (dynamic_cast<const nn::ReLU*>(&m) && !chain.empty() && !chain.back().second) {
            chain.back().second = true;
        } else {
            throw Error("quantize: module " + std::to_string(i) + " (" + m.describe() +
                        ") is not a Linear or a ReLU after a Linear; only Linear/ReLU chains are quantized");
        }
    }
    check(!chain.empty(), "quantize: the model has no Linear layer");
    return chain;
}

QuantizedLinear quantize_linear(const Tensor& weight, const Tensor& bias, QParams input, bool relu, bool has_output, QParams output,
                                bool per_channel) {
    QuantizedLinear q;
    check(weight.dim() == 2, "quantize_linear: expected a [out, in] weight, got " + shape_str(weight.shape()));
    q.out = weight.shape()[0];
    q.in = weight.shape()[1];
    const std::vector<float> w = weight.contiguous().to_vector<float>();
    MinMaxObserver weight_range(per_channel ? q.out : 1);
    weight_range.observe(w.data(), static_cast<std::int64_t>(w.size()));
    q.weight_params = weight_range.qparams(kInt8, QScheme::Symmetric);
    q.weight.resize(w.size());
    if (per_channel) quantize_per_channel(w.data(), q.out, q.in, q.weight_params, q.weight.data());
    else quantize(w.data(), w.size(), q.weight_params[0], q.weight.data());
    const std::vector<float> b = bias.defined() ? bias.contiguous().to_vector<float>() : std::vector<float>(q.out, 0.0f);
    for (std::int64_t j = 0; j < q.out; ++j) {  // the bias joins the INT32 sums, so it takes their units
        const double units = static_cast<double>(input.scale) * q.weight_param(j).scale;
        q.bias.push_back(static_cast<std::int32_t>(std::clamp(round_half_even(b[j] / units), -2147483648.0, 2147483647.0)));
    }
    q.input = input;
    q.relu = relu;
    q.has_output = has_output;
    q.output = output;
    q.pack();
    return q;
}

void QuantizedLinear::pack() {
    const kernels::Int8GemmArgs g{0, out, in, nullptr, in, 0, weight.data(), in, true, 0, nullptr, 0, nullptr};
    packed = kernels::pack_int8_weights(kernels::best_int8_gemm(), g);
}

void for_each_calibration_batch(const Dataset& data, const PtqOptions& options, const std::function<void(Tensor)>& fn) {
    const std::size_t n = std::min(options.calibration, data.size());
    check(n > 0 && options.batch_size > 0, "quantize: needs at least one calibration example and a batch size");
    const NoGradGuard no_grad;
    for (std::size_t first = 0; first < n; first += options.batch_size) {
        std::vector<std::size_t> idx;
        for (std::size_t i = first; i < std::min(n, first + options.batch_size); ++i) idx.push_back(i);
        fn(data.get_batch(idx).inputs);
    }
}

QuantizedMlp quantize_mlp(nn::Sequential& model, const Dataset& data, const PtqOptions& options) {
    const auto chain = linear_relu_chain(model);
    // One observer per Linear input; a hidden layer's output is the next layer's input.
    std::vector<std::unique_ptr<Observer>> observers;
    for (std::size_t i = 0; i < chain.size(); ++i) observers.push_back(make_observer(options.observer, 1));
    for_each_calibration_batch(data, options, [&](Tensor x) {
        x = reshape(x, {x.shape()[0], x.numel() / x.shape()[0]});
        for (std::size_t l = 0; l < chain.size(); ++l) {
            const std::vector<float> v = x.contiguous().to_vector<float>();
            observers[l]->observe(v.data(), static_cast<std::int64_t>(v.size()));
            x = chain[l].first->forward(x);
            if (chain[l].second) x = relu(x);
        }
    });
    QuantizedMlp q;
    for (std::size_t l = 0; l < chain.size(); ++l) {
        const QParams in = observers[l]->qparams(kUint8, QScheme::Asymmetric)[0];
        const bool has_output = l + 1 < chain.size();
        const QParams out = has_output ? observers[l + 1]->qparams(kUint8, QScheme::Asymmetric)[0] : QParams{};
        q.layers.push_back(quantize_linear(chain[l].first->weight, chain[l].first->bias, in, chain[l].second, has_output, out, options.per_channel));
    }
    return q;
}

namespace {

// quantize_input's loop over one chunk; returns how many NaNs it saw. x / scale is clamped
// first to the integers just outside the range that remains after the zero point (so
// saturation is unchanged and the value is small), then rounded to nearest, ties to even,
// by adding and subtracting 1.5 * 2^52: at that magnitude a double has no fraction bits,
// so the addition itself rounds, in the default mode. No branch and no library call, so
// the loop vectorises; target_clones adds an AVX-512 copy (8 divisions per instruction),
// chosen at load time where the CPU has it, besides the baseline x86-64 one.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("avx512f", "default")))
#endif
// (The NaN count is an int, not a bool: GCC does not vectorise a bool |= reduction.)
std::int64_t quantize_chunk(const float* src, std::int64_t count, double scale, double lo, double hi, int zero_point,
                            std::uint8_t* __restrict dst) {
    constexpr double round_magic = 0x1.8p52;
    std::int64_t nans = 0;
    for (std::int64_t i = 0; i < count; ++i) {
        const double v = static_cast<double>(src[i]) / scale;
        nans += v != v;
        const double above = v > lo ? v : lo;  // NaN -> lo (the caller refuses it)
        const double clamped = above < hi ? above : hi;
        const double rounded = (clamped + round_magic) - round_magic;
        dst[i] = static_cast<std::uint8_t>(std::clamp(static_cast<int>(rounded) + zero_point, 0, 255));
    }
    return nans;
}

}  // namespace

void quantize_input(const float* x, std::size_t n, QParams p, std::uint8_t* out) {
    check(p.scale > 0.0f, "quantize: the scale must be positive");
    static_assert(kUint8.qmin == 0 && kUint8.qmax == 255, "quantize_chunk clamps to [0, 255]");
    const double lo = kUint8.qmin - p.zero_point - 1.0, hi = kUint8.qmax - p.zero_point + 1.0;
    std::atomic<bool> saw_nan{false};
    parallel_for(static_cast<std::int64_t>(n), 1 << 14, [&](std::int64_t first, std::int64_t last) {
        if (quantize_chunk(x + first, last - first, p.scale, lo, hi, p.zero_point, out + first) > 0) saw_nan = true;
    });
    if (saw_nan) throw Error("quantize: NaN input (a NaN has no nearest integer; find where it came from)");
}

namespace {

// One layer on u8 input [B, in]: INT8 GEMM with fused requantization to u8.
std::vector<std::uint8_t> hidden_layer(const QuantizedLinear& L, const std::uint8_t* x, std::int64_t B) {
    std::vector<quant::FixedPointMultiplier> m;
    for (std::int64_t j = 0; j < L.out; ++j)
        m.push_back(requantize_multiplier(L.input.scale, L.weight_param(j).scale, L.output.scale));
    std::vector<std::uint8_t> y(static_cast<std::size_t>(B * L.out));
    // A fused ReLU: nothing below real 0, i.e. below the output's zero point.
    const QRange range{L.relu ? std::max(L.output.zero_point, kUint8.qmin) : kUint8.qmin, kUint8.qmax};
    kernels::Int8Requant rq{L.bias.data(), m.data(), true, L.output.zero_point, range, y.data(), L.out};
    kernels::Int8GemmArgs g{B, L.out, L.in, x, L.in, L.input.zero_point, L.weight.data(), L.in, true, 0,
                            nullptr, 0, &rq};
    if (L.packed.width > 0) g.packed_b = &L.packed;
    kernels::int8_gemm(g);
    return y;
}

// The last layer: INT32 sums plus bias, dequantized to float logits (the output boundary).
std::vector<float> last_layer(const QuantizedLinear& L, const std::uint8_t* x, std::int64_t B) {
    std::vector<std::int32_t> acc(static_cast<std::size_t>(B * L.out));
    kernels::Int8GemmArgs g{B, L.out, L.in, x, L.in, L.input.zero_point, L.weight.data(), L.in, true, 0,
                            acc.data(), L.out, nullptr};
    if (L.packed.width > 0) g.packed_b = &L.packed;
    kernels::int8_gemm(g);
    std::vector<float> logits(acc.size());
    for (std::int64_t i = 0; i < B; ++i)
        for (std::int64_t j = 0; j < L.out; ++j) {
            const float v = static_cast<float>(acc[i * L.out + j] + L.bias[j]) * (L.input.scale * L.weight_param(j).scale);
            logits[i * L.out + j] = L.relu ? std::max(v, 0.0f) : v;
        }
    return logits;
}

}  // namespace

Tensor QuantizedMlp::forward(const Tensor& x) const {
    check(!layers.empty(), "QuantizedMlp: no layers");
    check(x.dim() >= 2, "QuantizedMlp: expected input [batch, features...], got " + shape_str(x.shape()));
    const std::int64_t B = x.shape()[0];
    check(x.numel() == B * layers[0].in, "QuantizedMlp: expected " + std::to_string(layers[0].in) +
                                              " input features, got " + shape_str(x.shape()));
    // A contiguous FP32 CPU input (the usual case) is read in place: copying it through
    // to_vector() cost more than the first GEMM.
    const Tensor xc = x.contiguous();
    std::vector<float> converted;
    const float* xf = nullptr;
    if (xc.dtype() == DType::Float32 && xc.device().is_cpu()) {
        xf = xc.data<float>();
    } else {
        converted = xc.to_vector<float>();
        xf = converted.data();
    }
    std::vector<std::uint8_t> h(static_cast<std::size_t>(xc.numel()));
    quantize_input(xf, h.size(), layers[0].input, h.data());  // the input boundary: float -> u8, once
    return forward_quantized(h.data(), B);
}

Tensor QuantizedMlp::forward_quantized(const std::uint8_t* x, std::int64_t B) const {
    check(!layers.empty(), "QuantizedMlp: no layers");
    std::vector<std::uint8_t> h;
    for (std::size_t l = 0; l + 1 < layers.size(); ++l) {
        h = hidden_layer(layers[l], x, B);
        x = h.data();
    }
    return from_vector(last_layer(layers.back(), x, B), {B, layers.back().out});
}

double QuantizedMlp::accuracy(const Dataset& data, std::size_t batch_size) const {
    return classification_accuracy(data, batch_size, [this](const Tensor& x) { return forward(x); });
}

double classification_accuracy(const Dataset& data, std::size_t batch_size,
                               const std::function<Tensor(const Tensor&)>& forward) {
    check(data.size() > 0 && batch_size > 0, "accuracy: empty data set or batch size 0");
    std::size_t correct = 0;
    for (std::size_t first = 0; first < data.size(); first += batch_size) {
        std::vector<std::size_t> idx;
        for (std::size_t i = first; i < std::min(data.size(), first + batch_size); ++i) idx.push_back(i);
        const Batch b = data.get_batch(idx);
        const std::vector<std::int32_t> pred = argmax(forward(b.inputs)).to_vector<std::int32_t>();
        const std::vector<std::int32_t> truth = b.targets.to_vector<std::int32_t>();
        for (std::size_t i = 0; i < pred.size(); ++i) correct += pred[i] == truth[i];
    }
    return static_cast<double>(correct) / static_cast<double>(data.size());
}

std::string QuantizedMlp::describe() const {
    std::string s = "QuantizedMlp(";
    for (std::size_t l = 0; l < layers.size(); ++l)
        s += (l ? ", " : "") + std::to_string(layers[l].in) + " -> " + std::to_string(layers[l].out) +
             (layers[l].weight_params.size() > 1 ? " per-channel" : " per-tensor") + (layers[l].relu ? " +ReLU" : "");
    return s + ")";
}

}  // namespace gl::quant
