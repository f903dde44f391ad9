// Post-training quantization of a CNN and its integer-only forward pass (NHWC, see the header).
#include "quant/quantized_cnn.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>

#include "base/error.hpp"
#include "nn/conv_layers.hpp"
#include "numerics/observer.hpp"
#include "ops/ops.hpp"
#include "parallel/thread_pool.hpp"

namespace gl::quant {

namespace {

// dst[0, n) = src[0, n). The runs here are a few bytes to a few hundred (a tap of C
// channels, or a kernel row of taps), where a call to memmove per run cost more than the
// copy: for the CNN's first layer (C = 1) im2col was a million 1-byte memmove calls per
// batch of 256 images. Copies of a fixed size compile to plain moves; a byte loop would
// not help, as the compiler turns it back into the call. So: 8 bytes at a time, the last
// 8 overlapping the one before, and runs shorter than 8 in at most two overlapping pieces.
inline void copy_run(const std::uint8_t* src, std::int64_t n, std::uint8_t* dst) {
    if (n >= 8) {
        for (std::int64_t b = 0; b + 8 < n; b += 8) std::memcpy(dst + b, src + b, 8);
        std::memcpy(dst + n - 8, src + n - 8, 8);
    } else if (n >= 4) {
        std::memcpy(dst, src, 4);
        std::memcpy(dst + n - 4, src + n - 4, 4);
    } else if (n > 0) {  // 1 to 3 bytes
        dst[0] = src[0];
        dst[n / 2] = src[n / 2];
        dst[n - 1] = src[n - 1];
    }
}

// out[c] = max(out[c], in[c]) for c < C; the two never overlap, which lets the compiler
// vectorize the loop without checking.
inline void max_into(const std::uint8_t* __restrict in, std::int64_t C, std::uint8_t* __restrict out) {
    for (std::int64_t c = 0; c < C; ++c) out[c] = std::max(out[c], in[c]);
}

}  // namespace

void im2col_u8(const std::uint8_t* x, const ConvShape& s, std::uint8_t zero_point, std::uint8_t* cols) {
    const std::int64_t P = s.out_height(), Q = s.out_width(), C = s.channels, patch = s.patch();
    const std::int64_t run = s.kernel * C;  // one kernel row of taps, contiguous in NHWC
    check(P > 0 && Q > 0, "im2col_u8: the kernel does not fit in the padded image");
    // One task per output row (n, p): Q patches of `patch` bytes.
    parallel_for(s.images * P, 1, [&](std::int64_t first, std::int64_t last) {
        for (std::int64_t np = first; np < last; ++np) {
            const std::int64_t n = np / P, p = np % P;
            const std::uint8_t* image = x + n * s.height * s.width * C;
            std::uint8_t* row = cols + np * Q * patch;
            for (std::int64_t q = 0; q < Q; ++q, row += patch)
                for (std::int64_t r = 0; r < s.kernel; ++r) {
                    const std::int64_t h = p * s.stride - s.padding + r;  // input row of tap r
                    const std::int64_t w0 = q * s.stride - s.padding;     // input column of tap 0
                    std::uint8_t* dst = row + r * run;
                    if (h < 0 || h >= s.height) {  // the whole kernel row is padding
                        std::fill(dst, dst + run, zero_point);
                        continue;
                    }
                    if (w0 >= 0 && w0 + s.kernel <= s.width) {  // all of its taps inside: one run
                        copy_run(image + (h * s.width + w0) * C, run, dst);
                        continue;
                    }
                    for (std::int64_t t = 0; t < s.kernel; ++t) {  // at the left or right edge
                        const std::int64_t w = w0 + t;  // input column of tap t
                        if (w < 0 || w >= s.width) std::fill(dst + t * C, dst + (t + 1) * C, zero_point);
                        else copy_run(image + (h * s.width + w) * C, C, dst + t * C);
                    }
                }
        }
    });
}

void max_pool_u8(const std::uint8_t* x, std::int64_t images, std::int64_t height, std::int64_t width,
                 std::int64_t channels, std::int64_t window, std::uint8_t* y) {
    check(window >= 1, "max_pool_u8: the window must be at least 1");
    const std::int64_t P = height / window, Q = width / window, C = channels;
    parallel_for(images * P, 1, [&](std::int64_t first, std::int64_t last) {
        for (std::int64_t np = first; np < last; ++np) {
            const std::int64_t n = np / P, p = np % P;
            for (std::int64_t q = 0; q < Q; ++q) {
                std::uint8_t* out = y + (np * Q + q) * C;
                const std::uint8_t* corner = x + ((n * height + p * window) * width + q * window) * C;  // tap (0, 0)
                copy_run(corner, C, out);
                for (std::int64_t r = 0; r < window; ++r)
                    for (std::int64_t t = r == 0 ? 1 : 0; t < window; ++t) max_into(corner + (r * width + t) * C, C, out);
            }
        }
    });
}

void QuantizedConv2d::pack() {
    const kernels::Int8GemmArgs g{0, out, patch(), nullptr, patch(), 0, weight.data(), patch(), true, 0, nullptr, 0, nullptr};
    packed = kernels::pack_int8_weights(kernels::best_int8_gemm(), g);
}

std::vector<std::uint8_t> QuantizedConv2d::forward(const std::vector<std::uint8_t>& x, std::int64_t images,
                                                   std::int64_t& height, std::int64_t& width) const {
    const ConvShape shape{images, height, width, in, kernel, stride, padding};
    const std::int64_t P = shape.out_height(), Q = shape.out_width();
    check(static_cast<std::int64_t>(x.size()) == images * height * width * in,
          "QuantizedConv2d: the input does not hold images x height x width x channels bytes");
    std::vector<FixedPointMultiplier> m;
    for (std::int64_t k = 0; k < out; ++k) m.push_back(requantize_multiplier(input.scale, weight_param(k).scale, output.scale));
    const QRange range{relu ? std::max(output.zero_point, kUint8.qmin) : kUint8.qmin, kUint8.qmax};  // ReLU fused
    const std::int64_t PP = P / pool, QP = Q / pool;
    std::vector<std::uint8_t> y(static_cast<std::size_t>(images * PP * QP * out));
    // Images go in chunks whose patches take about 4 MiB, so that the patch matrix stays
    // in the caches between im2col and the GEMM instead of taking a batch x 56 KiB.
    const std::int64_t image_patches = P * Q * patch();
    const std::int64_t chunk = std::clamp<std::int64_t>((std::int64_t{4} << 20) / std::max<std::int64_t>(image_patches, 1), 1, images);
    std::vector<std::uint8_t> cols(static_cast<std::size_t>(chunk * image_patches));
    std::vector<std::uint8_t> conv(pool > 1 ? static_cast<std::size_t>(chunk * P * Q * out) : 0);
    for (std::int64_t n0 = 0; n0 < images; n0 += chunk) {
        const std::int64_t n = std::min(chunk, images - n0);
        ConvShape part = shape;
        part.images = n;
        im2col_u8(x.data() + n0 * height * width * in, part, static_cast<std::uint8_t>(input.zero_point), cols.data());
        // [n P Q, patch] x weight^T [patch, out] -> [n P Q, out] = NHWC, requantized in the GEMM.
        std::uint8_t* dst = pool > 1 ? conv.data() : y.data() + n0 * P * Q * out;
        const kernels::Int8Requant rq{bias.data(), m.data(), true, output.zero_point, range, dst, out};
        kernels::Int8GemmArgs g{n * P * Q, out, patch(), cols.data(), patch(), input.zero_point, weight.data(), patch(),
                                true, 0, nullptr, 0, &rq};
        if (packed.width > 0) g.packed_b = &packed;
        kernels::int8_gemm(g);
        if (pool > 1) max_pool_u8(conv.data(), n, P, Q, out, pool, y.data() + n0 * PP * QP * out);
    }
    height = PP;
    width = QP;
    return y;
}

QuantizedConv2d quantize_conv2d(const Tensor& weight, const Tensor& bias, std::int64_t stride, std::int64_t padding,
                                QParams input, bool relu, std::int64_t pool, QParams output, bool per_channel) {
    check(weight.dim() == 4 && weight.shape()[2] == weight.shape()[3],
          "quantize_conv2d: expected a [out, in, k, k] weight, got " + shape_str(weight.shape()));
    QuantizedConv2d q;
    q.out = weight.shape()[0];
    q.in = weight.shape()[1];
    q.kernel = weight.shape()[2];
    q.stride = stride;
    q.padding = padding;
    q.input = input;
    q.output = output;
    q.relu = relu;
    q.pool = pool;
    const std::vector<float> w = weight.contiguous().to_vector<float>();
    const std::int64_t patch = q.patch();
    MinMaxObserver weight_range(per_channel ? q.out : 1);  // a filter's range does not depend on the order of its values
    weight_range.observe(w.data(), static_cast<std::int64_t>(w.size()));
    q.weight_params = weight_range.qparams(kInt8, QScheme::Symmetric);
    std::vector<std::int8_t> kcrs(w.size());
    if (per_channel) quantize_per_channel(w.data(), q.out, patch, q.weight_params, kcrs.data());
    else quantize(w.data(), w.size(), q.weight_params[0], kcrs.data());
    // [K, C, R, S] -> [K, R, S, C], the order of an NHWC patch.
    q.weight.resize(kcrs.size());
    const std::int64_t C = q.in, RS = q.kernel * q.kernel;
    for (std::int64_t k = 0; k < q.out; ++k)
        for (std::int64_t c = 0; c < C; ++c)
            for (std::int64_t rs = 0; rs < RS; ++rs) q.weight[(k * RS + rs) * C + c] = kcrs[(k * C + c) * RS + rs];
    const std::vector<float> b = bias.defined() ? bias.contiguous().to_vector<float>() : std::vector<float>(q.out, 0.0f);
    for (std::int64_t k = 0; k < q.out; ++k) {  // the bias joins the INT32 sums, so it takes their units
        const double units = static_cast<double>(input.scale) * q.weight_param(k).scale;
        q.bias.push_back(static_cast<std::int32_t>(std::clamp(round_half_even(b[k] / units), -2147483648.0, 2147483647.0)));
    }
    q.pack();
    return q;
}

Tensor QuantizedCnn::forward(const Tensor& x) const {
    check(!convs.empty() && !head.layers.empty(), "QuantizedCnn: no layers");
    const std::int64_t B = x.dim() >= 1 ? x.shape()[0] : 0;
    const std::int64_t pixels = height * width;
    check(x.dim() >= 2 && x.numel() == B * channels * pixels,
          "QuantizedCnn: expected " + std::to_string(B) + " images of " + std::to_string(channels) + "x" +
              std::to_string(height) + "x" + std::to_string(width) + ", got " + shape_str(x.shape()));
    const std::vector<float> xf = x.contiguous().to_vector<float>();
    std::vector<std::uint8_t> nchw(xf.size());
    quantize_input(xf.data(), xf.size(), convs[0].input, nchw.data());  // the input boundary: float -> u8, once
    std::vector<std::uint8_t> h(nchw.size());
    for (std::int64_t n = 0; n < B; ++n)  // NCHW -> NHWC (a copy when C = 1)
        for (std::int64_t c = 0; c < channels; ++c)
            for (std::int64_t i = 0; i < pixels; ++i)
                h[(n * pixels + i) * channels + c] = nchw[(n * channels + c) * pixels + i];
    std::int64_t rows = height, cols = width;
    for (const QuantizedConv2d& conv : convs) h = conv.forward(h, B, rows, cols);
    return head.forward_quantized(h.data(), B);
}

double QuantizedCnn::accuracy(const Dataset& data, std::size_t batch_size) const {
    return classification_accuracy(data, batch_size, [this](const Tensor& x) { return forward(x); });
}

std::string QuantizedCnn::describe() const {
    std::string s = "QuantizedCnn(";
    for (const QuantizedConv2d& c : convs)
        s += "conv " + std::to_string(c.in) + " -> " + std::to_string(c.out) + " " + std::to_string(c.kernel) + "x" +
             std::to_string(c.kernel) + (c.weight_params.size() > 1 ? " per-channel" : " per-tensor") +
             (c.relu ? " +ReLU" : "") + (c.pool > 1 ? " +pool" + std::to_string(c.pool) : "") + ", ";
    const std::string mlp = head.describe();  // "QuantizedMlp(...)"
    return s + mlp.substr(mlp.find('(') + 1);
}

bool read_float_layer(nn::Module& module, QuantizableLayer& layer) {
    if (auto* linear = dynamic_cast<nn::Linear*>(&module)) {
        layer.conv = false;
        layer.weight = linear->weight;
        layer.bias = linear->bias;
        return true;
    }
    auto* conv = dynamic_cast<nn::Conv2d*>(&module);
    if (!conv) return false;
    const Conv2dOptions& o = conv->options;
    check(o.stride[0] == o.stride[1] && o.padding[0] == o.padding[1] && o.dilation == std::array<std::int64_t, 2>{1, 1} &&
              o.groups == 1 && conv->weight.shape()[2] == conv->weight.shape()[3],
          "quantize: " + conv->describe() + " is not a square convolution with one group and no dilation; only those "
          "are quantized");
    layer.conv = true;
    layer.weight = conv->weight;
    layer.bias = conv->bias;
    layer.stride = o.stride[0];
    layer.padding = o.padding[0];
    return true;
}

std::vector<QuantizableLayer> cnn_layers(const nn::Sequential& model, LayerReader read, std::int64_t& side) {
    const auto refuse = [&](std::size_t i, const std::string& why) {
        throw Error("quantize: module " + std::to_string(i) + " (" + model.at(i).describe() + ") " + why +
                    "; a quantized CNN is ToImage, (Conv2d, ReLU, MaxPool2d)..., Flatten, (Linear, ReLU)...");
    };
    check(model.size() > 0, "quantize: the model is empty");
    const auto* image = dynamic_cast<const nn::ToImage*>(&model.at(0));
    if (!image) refuse(0, "is not ToImage");
    side = image->side();
    std::vector<QuantizableLayer> layers;
    bool flattened = false;
    for (std::size_t i = 1; i < model.size(); ++i) {
        nn::Module& m = model.at(i);
        QuantizableLayer layer;
        if (read(m, layer)) {
            if (layer.conv == flattened) refuse(i, flattened ? "is a convolution after Flatten" : "is a Linear before Flatten");
            layer.module = i;
            layers.push_back(layer);
        } else if (dynamic_cast<nn::ReLU*>(&m) && !layers.empty() && !layers.back().relu && layers.back().pool == 1) {
            layers.back().relu = true;
        } else if (auto* pool = dynamic_cast<nn::MaxPool2d*>(&m); pool && !layers.empty() && layers.back().conv &&
                                                                   layers.back().pool == 1) {
            if (pool->stride() != pool->kernel()) refuse(i, "has a stride other than its window");
            layers.back().pool = pool->kernel();
        } else if (dynamic_cast<nn::Flatten*>(&m) && !flattened && !layers.empty()) {
            flattened = true;
        } else {
            refuse(i, "is not where a quantized CNN can have it");
        }
    }
    check(flattened && !layers.empty() && !layers.back().conv,
          "quantize: the model has no Linear layer after Flatten; a quantized CNN ends in Linear layers");
    return layers;
}

bool has_conv(const nn::Sequential& model) {
    for (std::size_t i = 0; i < model.size(); ++i)
        if (dynamic_cast<nn::Conv2d*>(&model.at(i))) return true;
    return false;
}

namespace {

// A Linear's [out, C H W] weight (the float model's NCHW flattening) with its columns in
// the (h, w, c) order of the NHWC activations.
Tensor nhwc_columns(const Tensor& weight, std::int64_t C, std::int64_t H, std::int64_t W) {
    const std::int64_t out = weight.shape()[0];
    const std::vector<float> w = weight.contiguous().to_vector<float>();
    std::vector<float> r(w.size());
    for (std::int64_t j = 0; j < out; ++j)
        for (std::int64_t c = 0; c < C; ++c)
            for (std::int64_t hw = 0; hw < H * W; ++hw) r[(j * H * W + hw) * C + c] = w[(j * C + c) * H * W + hw];
    return from_vector(r, {out, C * H * W});
}

}  // namespace

QuantizedCnn build_quantized_cnn(const std::vector<QuantizableLayer>& layers, const std::vector<QParams>& inputs,
                                 std::int64_t side, bool per_channel) {
    check(!layers.empty() && layers[0].conv && inputs.size() == layers.size(),
          "build_quantized_cnn: needs the layers, starting with a convolution, and one input parameter set per layer");
    QuantizedCnn q;
    q.channels = layers[0].weight.shape()[1];
    q.height = q.width = side;
    std::int64_t h = side, w = side, c = q.channels;
    for (std::size_t l = 0; l < layers.size(); ++l) {
        const QuantizableLayer& L = layers[l];
        const bool has_output = l + 1 < layers.size();
        const QParams out = has_output ? inputs[l + 1] : QParams{};
        if (L.conv) {
            check(L.weight.shape()[1] == c, "quantize: convolution " + std::to_string(l) + " expects " +
                                                std::to_string(L.weight.shape()[1]) + " channels, gets " + std::to_string(c));
            q.convs.push_back(quantize_conv2d(L.weight, L.bias, L.stride, L.padding, inputs[l], L.relu, L.pool, out, per_channel));
            const ConvShape s{1, h, w, c, q.convs.back().kernel, L.stride, L.padding};
            h = s.out_height() / L.pool;
            w = s.out_width() / L.pool;
            c = q.convs.back().out;
            continue;
        }
        Tensor weight = L.weight;
        if (q.head.layers.empty()) {  // the first Linear reads the flattened NHWC activations
            check(weight.shape()[1] == c * h * w, "quantize: the first Linear takes " + std::to_string(weight.shape()[1]) +
                                                      " features, the convolutions give " + std::to_string(c * h * w));
            weight = nhwc_columns(weight, c, h, w);
        }
        q.head.layers.push_back(quantize_linear(weight, L.bias, inputs[l], L.relu, has_output, out, per_channel));
    }
    return q;
}

QuantizedCnn quantize_cnn(nn::Sequential& model, const Dataset& data, const PtqOptions& options) {
    std::int64_t side = 0;
    const std::vector<QuantizableLayer> layers = cnn_layers(model, &read_float_layer, side);
    std::vector<std::unique_ptr<Observer>> observers;  // one per layer input
    for (std::size_t i = 0; i < layers.size(); ++i) observers.push_back(make_observer(options.observer, 1));
    for_each_calibration_batch(data, options, [&](Tensor x) {
        std::size_t next = 0;  // the next layer to observe
        for (std::size_t i = 0; i < model.size(); ++i) {
            if (next < layers.size() && layers[next].module == i) {
                const std::vector<float> v = x.contiguous().to_vector<float>();
                observers[next++]->observe(v.data(), static_cast<std::int64_t>(v.size()));
            }
            x = model.at(i).forward(x);
        }
    });
    std::vector<QParams> inputs;
    for (const auto& o : observers) inputs.push_back(o->qparams(kUint8, QScheme::Asymmetric)[0]);
    return build_quantized_cnn(layers, inputs, side, options.per_channel);
}

}  // namespace gl::quant
