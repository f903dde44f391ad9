/// @file
/// @brief An MLP in INT8 (claim Q-1): post-training quantization of a float
/// Linear/ReLU network with calibration, and its integer-only inference path.
///
/// Owns: QuantizedLinear (INT8 weights per tensor or per output channel, INT32 bias,
/// UINT8 input and output parameters, ReLU fused into the output range), QuantizedMlp
/// (a chain of them), calibration (observers on the float model's activations), and the
/// integer-only forward: the only floats are the input, quantized once, and the logits,
/// dequantized once; between them, INT8 GEMMs with requantization fused into their
/// outputs (kernels/gemm_int8.hpp). Knows nothing about files (model_file.hpp) or QAT
/// (qat.hpp, which converts into this).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "data/dataset.hpp"
#include "kernels/gemm_int8.hpp"
#include "nn/module.hpp"
#include "numerics/quantize.hpp"

namespace gl::quant {

/// One Linear layer in INT8: y = relu?(x W^T + b), computed as u8 x s8 -> s32.
struct QuantizedLinear {
    std::int64_t in = 0;                    ///< input features
    std::int64_t out = 0;                   ///< output features
    std::vector<std::int8_t> weight;        ///< [out, in], symmetric (zero point 0)
    std::vector<QParams> weight_params;     ///< 1 (per tensor) or out (per channel)
    std::vector<std::int32_t> bias;         ///< [out], in units of input.scale * weight scale of the row
    QParams input;                          ///< UINT8 parameters of the input
    bool relu = false;                      ///< a ReLU follows (fused: output range starts at its zero point)
    bool has_output = false;                ///< the output is requantized to UINT8 (every layer but the last)
    QParams output;                         ///< UINT8 parameters of the output, when has_output
    /// The weight packed for kernels::best_int8_gemm() by pack() (empty: the GEMM packs it
    /// in every call). Pack again after changing the weight.
    kernels::Int8PackedB packed;
    /// Packs the weight once, so that the forward pass does not repack it per call.
    void pack();
    /// Weight parameters of output row @p j.
    QParams weight_param(std::int64_t j) const { return weight_params.size() == 1 ? weight_params[0] : weight_params[j]; }
};

/// A Linear/ReLU chain in INT8.
class QuantizedMlp {
public:
    std::vector<QuantizedLinear> layers;  ///< in order
    /// Float [B, in] -> float logits [B, classes]: quantize the input, run every layer on
    /// the INT8 GEMM with fused requantization, dequantize the last layer's INT32 sums.
    Tensor forward(const Tensor& x) const;
    /// The integer part of forward(): @p x is @p batch rows already quantized with the
    /// first layer's input parameters (a CNN's activations, for its head).
    Tensor forward_quantized(const std::uint8_t* x, std::int64_t batch) const;
    /// Fraction of @p data classified correctly.
    double accuracy(const Dataset& data, std::size_t batch_size = 1000) const;
    /// "QuantizedMlp(784 -> 128 per-channel, 128 -> 10 per-channel)".
    std::string describe() const;
};

/// Fraction of @p data that @p forward (inputs -> logits) classifies correctly, in
/// batches of @p batch_size.
double classification_accuracy(const Dataset& data, std::size_t batch_size,
                               const std::function<Tensor(const Tensor&)>& forward);

/// Settings of post-training quantization.
struct PtqOptions {
    std::string observer = "minmax";  ///< activations: minmax, moving_average, percentile or mse
    bool per_channel = true;          ///< weights: one scale per output channel (else per tensor)
    std::size_t calibration = 1000;   ///< calibration examples (the first of the set)
    std::size_t batch_size = 250;     ///< calibration batch size
};

/// PTQ's calibration pass: calls @p fn with each batch of the first options.calibration
/// examples of @p data (options.batch_size at most), with gradients off. Throws gl::Error
/// for an empty calibration set or a zero batch size.
void for_each_calibration_batch(const Dataset& data, const PtqOptions& options, const std::function<void(Tensor)>& fn);

/// Quantizes @p model (a Sequential of Linear layers, each optionally followed by a ReLU)
/// after running @p options.calibration examples of @p data through it with an observer
/// on every Linear's input. Weights: symmetric INT8 from their own min/max. Throws
/// gl::Error for any other layer or an empty calibration set.
QuantizedMlp quantize_mlp(nn::Sequential& model, const Dataset& data, const PtqOptions& options);

/// Builds one layer from a float Linear's @p weight [out, in] and @p bias [out] (may be
/// undefined), given its input and (when it has one) output
/// parameters: weights symmetric INT8 per channel or per tensor, bias rounded to INT32 in
/// units of input scale x weight scale.
QuantizedLinear quantize_linear(const Tensor& weight, const Tensor& bias, QParams input, bool relu, bool has_output, QParams output,
                                bool per_channel);

/// The input boundary of the integer forward pass: quantize(x, n, p, out) into UINT8 with
/// the same results (round half to even, saturation, gl::Error for NaN or a scale that is
/// not positive), computed on the intra-op threads without branches or library calls
/// (quantize() calls the per-value function, one library call per element,
/// which made the input conversion cost more than the INT8 GEMMs behind it).
void quantize_input(const float* x, std::size_t n, QParams p, std::uint8_t* out);

/// The Linear layers of @p model and, for each, whether a ReLU follows it; throws
/// gl::Error naming the first module that is neither.
std::vector<std::pair<nn::Linear*, bool>> linear_relu_chain(const nn::Sequential& model);

}  // namespace gl::quant
