// Fake quantization: forward is a quantize-dequantize round trip, backward the
// straight-through estimator with clipping.
#include "ops/fake_quant.hpp"

#include <cmath>

#include "autograd/node.hpp"
#include "base/error.hpp"

namespace gl {
namespace {

// Which parameter set governs element i of n elements split into params.size() rows.
std::size_t channel_of(std::size_t i, std::size_t n, std::size_t channels) { return i / (n / channels); }

void check_params(std::size_t n, std::size_t channels, const std::string& what) {
    check(channels >= 1 && n % channels == 0,
          what + ": " + std::to_string(channels) + " parameter sets do not split " + std::to_string(n) +
              " elements into equal channels");
}

struct FakeQuantizeBackward final : Node {
    Tensor input;
    std::vector<quant::QParams> params;
    quant::QRange range;
    std::string name() const override { return "FakeQuantizeBackward"; }
    std::vector<Tensor> backward(const Tensor& g) override {
        const Tensor gc = g.contiguous();
        const std::vector<float> dx = fake_quantize_backward(input.to_vector<float>(), gc.to_vector<float>(), params, range);
        return {from_vector(dx, input.shape())};
    }
};

}  // namespace

std::pair<float, float> representable_range(quant::QParams p, quant::QRange range) {
    return {quant::dequantize_value(range.qmin, p), quant::dequantize_value(range.qmax, p)};
}

std::vector<float> fake_quantize_backward(const std::vector<float>& x, const std::vector<float>& grad,
                                          const std::vector<quant::QParams>& params, quant::QRange range) {
    check(x.size() == grad.size(), "fake_quantize backward: gradient and input differ in size");
    check_params(x.size(), params.size(), "fake_quantize backward");
    // LAB 12 BEGIN: the fake-quantize backward (straight-through estimator with clipping)
    // Rounding is a staircase: its true derivative is 0 almost everywhere, which would stop
    // training dead. The STE passes the gradient straight through as if rounding were the
    // identity, but only inside the representable range of the element's channel
    // (representable_range, ends included; channel_of says which parameters): an input
    // beyond it was clipped, moving it a little does not move the output, so its gradient is 0.
    std::vector<float> dx(x.size());
    for (std::size_t i = 0; i < x.size(); ++i) {
        const auto [lo, hi] = representable_range(params[channel_of(i, x.size(), params.size())], range);
        dx[i] = x[i] >= lo && x[i] <= hi ? grad[i] : 0.0f;
    }
    return dx;
    // LAB 12 END
}

Tensor fake_quantize(const Tensor& x, const std::vector<quant::QParams>& params, quant::QRange range) {
    check(x.dtype() == DType::Float32, "fake_quantize: expects float32, got " + name_of(x.dtype()));
    const auto n = static_cast<std::size_t>(x.numel());
    check_params(n, params.size(), "fake_quantize");
    const std::vector<float> in = x.contiguous().to_vector<float>();
    std::vector<float> out(n);
    for (std::size_t i = 0; i < n; ++i) {
        const quant::QParams p = params[channel_of(i, n, params.size())];
        out[i] = quant::dequantize_value(quant::quantize_value(in[i], p, range), p);
    }
    Tensor result = from_vector(out, x.shape());
    if (should_record({x})) {
        auto node = std::make_shared<FakeQuantizeBackward>();
        node->input = save_for_backward(x.contiguous());
        node->params = params;
        node->range = range;
        record(result, node, {x});
    }
    return result;
}

}  // namespace gl
