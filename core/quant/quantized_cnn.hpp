/// @file
/// @brief A CNN in INT8 (claim Q-1): post-training quantization of a float
/// Conv2d/ReLU/MaxPool2d network followed by a Linear/ReLU head, and its integer-only
/// inference path.
///
/// Owns: QuantizedConv2d (INT8 weights per tensor or per output channel, INT32 bias,
/// UINT8 input and output, ReLU and max pooling fused behind it), QuantizedCnn (the
/// convolutions, then a QuantizedMlp head), the UINT8 im2col and max pooling they run
/// on, and PTQ of a float CNN (quantize_cnn).
///
/// Layout. Activations stay NHWC ([image][row][column][channel]) from the input to the
/// head. The GEMM of a convolution computes [output pixels, K] = patches [output pixels,
/// R S C] x weights^T [R S C, K]: its output rows are already NHWC, so no layer transposes
/// anything, and a patch is R x S runs of C contiguous bytes. The weights are reordered
/// to [K, R, S, C] once, when the layer is quantized, and the first Linear's columns from
/// the float model's (c, h, w) flattening to the (h, w, c) one.
///
/// Zero points. The padding of a convolution is real 0, which in UINT8 is the input's
/// zero point, not the byte 0: im2col_u8 pads with the zero point. Max pooling works on
/// the bytes directly: quantization with one scale and zero point is monotone, so the
/// largest byte is the byte of the largest value, and the output keeps the input's
/// parameters.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "data/dataset.hpp"
#include "kernels/gemm_int8.hpp"
#include "nn/module.hpp"
#include "numerics/quantize.hpp"
#include "quant/quantized_mlp.hpp"

namespace gl::quant {

/// The geometry of a square convolution on NHWC images.
struct ConvShape {
    std::int64_t images = 0;   ///< N
    std::int64_t height = 0;   ///< H of the input
    std::int64_t width = 0;    ///< W of the input
    std::int64_t channels = 0; ///< C of the input
    std::int64_t kernel = 1;   ///< R = S
    std::int64_t stride = 1;   ///< step between receptive fields, both directions
    std::int64_t padding = 0;  ///< pixels of real 0 added on each side
    /// Output rows P.
    std::int64_t out_height() const { return (height + 2 * padding - kernel) / stride + 1; }
    /// Output columns Q.
    std::int64_t out_width() const { return (width + 2 * padding - kernel) / stride + 1; }
    /// Values of one patch: R S C.
    std::int64_t patch() const { return kernel * kernel * channels; }
};

/// im2col on UINT8 NHWC images @p x: @p cols gets one row per output pixel (n, p, q), in
/// that order, holding the receptive field as [r][s][c] (s.patch() bytes); taps that fall
/// in the padding get @p zero_point, the byte of real 0. @p cols holds
/// N P Q x s.patch() bytes.
void im2col_u8(const std::uint8_t* x, const ConvShape& s, std::uint8_t zero_point, std::uint8_t* cols);

/// Max pooling of UINT8 NHWC images @p x ([N, H, W, C]) over @p window x @p window
/// windows, @p window apart (no padding; rows and columns that do not fill a window are
/// dropped, as max_pool2d does): @p y is [N, H / window, W / window, C].
void max_pool_u8(const std::uint8_t* x, std::int64_t images, std::int64_t height, std::int64_t width,
                 std::int64_t channels, std::int64_t window, std::uint8_t* y);

/// One Conv2d in INT8, with its ReLU and max pooling: y = pool(relu(conv(x, W) + b)).
struct QuantizedConv2d {
    std::int64_t in = 0;       ///< input channels C
    std::int64_t out = 0;      ///< filters K
    std::int64_t kernel = 1;   ///< filter side R = S
    std::int64_t stride = 1;   ///< convolution stride
    std::int64_t padding = 0;  ///< convolution padding
    std::vector<std::int8_t> weight;     ///< [out, kernel, kernel, in] (NHWC patch order), symmetric
    std::vector<QParams> weight_params;  ///< 1 (per tensor) or out (per channel)
    std::vector<std::int32_t> bias;      ///< [out], in units of input.scale * the filter's weight scale
    QParams input;             ///< UINT8 parameters of the input
    QParams output;            ///< UINT8 parameters of the output (before and after pooling)
    bool relu = false;         ///< a ReLU follows (fused: output range starts at its zero point)
    std::int64_t pool = 1;     ///< max-pool window (and stride) after it; 1: none
    kernels::Int8PackedB packed;  ///< weight packed for the INT8 GEMM that runs (pack())
    /// Weight parameters of filter @p k.
    QParams weight_param(std::int64_t k) const { return weight_params.size() == 1 ? weight_params[0] : weight_params[k]; }
    /// Values of one patch: kernel^2 in.
    std::int64_t patch() const { return kernel * kernel * in; }
    /// Packs the weight for kernels::best_int8_gemm(), once (called when the layer is built
    /// or loaded).
    void pack();
    /// UINT8 NHWC @p x [images, height, width, in] -> UINT8 NHWC output after pooling;
    /// @p height and @p width become the output's.
    std::vector<std::uint8_t> forward(const std::vector<std::uint8_t>& x, std::int64_t images, std::int64_t& height,
                                      std::int64_t& width) const;
};

/// Builds one convolution from a float Conv2d's @p weight [K, C, k, k] and @p bias [K]
/// (may be undefined), given its input and output parameters: weights symmetric INT8 per
/// filter or per tensor, reordered to [K, k, k, C]; bias rounded to INT32 in units of
/// input scale x weight scale; packed for the GEMM.
QuantizedConv2d quantize_conv2d(const Tensor& weight, const Tensor& bias, std::int64_t stride, std::int64_t padding,
                                QParams input, bool relu, std::int64_t pool, QParams output, bool per_channel);

/// A CNN in INT8: convolutions (each with its ReLU and pooling), then a Linear head whose
/// first layer reads the flattened NHWC activations.
class QuantizedCnn {
public:
    std::int64_t channels = 1;  ///< input image channels
    std::int64_t height = 0;    ///< input image rows
    std::int64_t width = 0;     ///< input image columns
    std::vector<QuantizedConv2d> convs;  ///< in order
    QuantizedMlp head;                   ///< the Linear layers after the convolutions
    /// Float images ([B, H W] rows for one channel, or [B, C, H, W]) -> float logits
    /// [B, classes]: quantize the input once, convolutions and head on the INT8 GEMM with
    /// requantization fused, dequantize the logits once.
    Tensor forward(const Tensor& x) const;
    /// Fraction of @p data classified correctly.
    double accuracy(const Dataset& data, std::size_t batch_size = 500) const;
    /// "QuantizedCnn(conv 1 -> 32 3x3 per-channel +ReLU +pool2, ..., 3136 -> 128 ...)".
    std::string describe() const;
};

/// One layer of a network to quantize, read from a float or a QAT module.
struct QuantizableLayer {
    bool conv = false;           ///< a convolution (else a Linear)
    Tensor weight;               ///< [K, C, R, S] or [out, in]
    Tensor bias;                 ///< [out], or undefined
    std::int64_t stride = 1;     ///< convolution only
    std::int64_t padding = 0;    ///< convolution only
    bool relu = false;           ///< a ReLU follows
    std::int64_t pool = 1;       ///< a max pooling of this window follows (convolution only)
    std::size_t module = 0;      ///< the module's index in the Sequential
};

/// Reads one module as a convolution or a Linear; returns false for anything else.
using LayerReader = bool (*)(nn::Module& module, QuantizableLayer& layer);

/// The layers of a CNN in the shape that quantize_cnn understands: ToImage, then
/// (Conv2d, ReLU?, MaxPool2d?) repeated, Flatten, then (Linear, ReLU?) repeated; @p read
/// recognises the convolutions and Linears (float ones or QAT ones). @p side gets
/// ToImage's side. Throws gl::Error naming the first module that does not fit.
std::vector<QuantizableLayer> cnn_layers(const nn::Sequential& model, LayerReader read, std::int64_t& side);

/// Reads nn::Conv2d (square, dilation 1, one group) and nn::Linear.
bool read_float_layer(nn::Module& module, QuantizableLayer& layer);

/// Builds the INT8 CNN from its @p layers (cnn_layers) on @p side x @p side one-channel
/// images, given each layer's input parameters @p inputs (one per layer, in order; a
/// layer's output parameters are the next layer's input ones).
QuantizedCnn build_quantized_cnn(const std::vector<QuantizableLayer>& layers, const std::vector<QParams>& inputs,
                                 std::int64_t side, bool per_channel);

/// Post-training quantization of a float CNN (nn::make_cnn's shape, see cnn_layers):
/// @p options.calibration examples of @p data through it with an observer on every
/// convolution's and Linear's input. Throws gl::Error for another shape of model.
QuantizedCnn quantize_cnn(nn::Sequential& model, const Dataset& data, const PtqOptions& options);

/// Whether @p model contains a convolution (quantize it with quantize_cnn, not quantize_mlp).
bool has_conv(const nn::Sequential& model);

}  // namespace gl::quant
