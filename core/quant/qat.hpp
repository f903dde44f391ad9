/// @file
/// @brief Quantization-aware training (claim Q-1): prepare, train with fake quantization,
/// convert.
///
/// Owns: QatLinear and QatConv2d (a Linear and a Conv2d whose input and weight pass
/// through fake quantization, so training sees the rounding and clipping the INT8 model
/// will do, and learns weights that survive them), prepare_qat (a float network -> the
/// same network with QAT layers sharing its parameters) and convert_qat / convert_qat_cnn
/// (-> QuantizedMlp / QuantizedCnn, with the ranges the observers settled on during
/// training).
#pragma once

#include <memory>

#include "nn/conv_layers.hpp"
#include "nn/module.hpp"
#include "numerics/observer.hpp"
#include "quant/quantized_cnn.hpp"
#include "quant/quantized_mlp.hpp"

namespace gl::quant {

/// y = fake_quant_u8(x) fake_quant_s8(W)^T + b. The input's range comes from a
/// moving-average min/max observer (updated in training mode only); the weight's from its
/// own min/max at each step, symmetric, per output channel or per tensor.
class QatLinear final : public nn::Module {
public:
    /// Shares @p linear's weight and bias (training this trains them).
    QatLinear(const nn::Linear& linear, bool per_channel);
    Tensor forward(const Tensor& x) override;
    std::string describe() const override;
    /// The input's UINT8 parameters as observed so far.
    QParams input_params() const;
    /// The weight's INT8 parameters now (one per row, or one).
    std::vector<QParams> weight_params() const;
    Tensor weight;  ///< [out, in], shared with the float Linear
    Tensor bias;    ///< [out], shared (may be undefined)
    bool per_channel;  ///< weights per output channel

private:
    MovingAverageObserver input_observer_{1};
};

/// y = conv2d(fake_quant_u8(x), fake_quant_s8(W)) + b: QatLinear for a convolution, the
/// weight fake-quantized per filter (output channel) or per tensor.
class QatConv2d final : public nn::Module {
public:
    /// Shares @p conv's weight and bias (training this trains them).
    QatConv2d(const nn::Conv2d& conv, bool per_channel);
    Tensor forward(const Tensor& x) override;
    std::string describe() const override;
    /// The input's UINT8 parameters as observed so far.
    QParams input_params() const;
    /// The weight's INT8 parameters now (one per filter, or one).
    std::vector<QParams> weight_params() const;
    Tensor weight;          ///< [K, C, k, k], shared with the float Conv2d
    Tensor bias;            ///< [K], shared (may be undefined)
    Conv2dOptions options;  ///< as the float Conv2d's
    bool per_channel;       ///< weights per filter

private:
    MovingAverageObserver input_observer_{1};
};

/// The QAT version of a network: each Linear becomes a QatLinear and each Conv2d a
/// QatConv2d sharing its parameters; the other modules (ReLU, MaxPool2d, Flatten,
/// ToImage) are rebuilt as they were. Throws gl::Error for a network that is neither a
/// Linear/ReLU chain (linear_relu_chain) nor a CNN that quantize_cnn takes (cnn_layers).
std::shared_ptr<nn::Sequential> prepare_qat(const nn::Sequential& model, bool per_channel);

/// The INT8 model of a QAT-trained chain: weights quantized with the parameters fake
/// quantization used, activations with the observed ranges. Throws gl::Error unless the
/// model came from prepare_qat and saw at least one training batch.
QuantizedMlp convert_qat(const nn::Sequential& qat_model);

/// The INT8 CNN of a QAT-trained CNN (prepare_qat of a CNN): as convert_qat. Throws
/// gl::Error unless every convolution and Linear is a QAT layer that saw a training batch.
QuantizedCnn convert_qat_cnn(const nn::Sequential& qat_model);

}  // namespace gl::quant
