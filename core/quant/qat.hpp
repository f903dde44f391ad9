/// @file
/// @brief Quantization-aware training (claim Q-1): prepare, train with fake quantization,
/// convert.
///
/// Owns: QatLinear (a Linear whose input and weight pass through fake quantization, so
/// training sees the rounding and clipping the INT8 model will do, and learns weights
/// that survive them), prepare_qat (a float Linear/ReLU chain -> the same chain with
/// QatLinear layers sharing its parameters) and convert_qat (-> QuantizedMlp, with the
/// ranges the observers settled on during training).
#pragma once

#include <memory>

#include "nn/module.hpp"
#include "numerics/observer.hpp"
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

/// The QAT version of a Linear/ReLU chain: each Linear becomes a QatLinear sharing its
/// parameters, ReLUs stay. Throws gl::Error for other layers (linear_relu_chain).
std::shared_ptr<nn::Sequential> prepare_qat(const nn::Sequential& model, bool per_channel);

/// The INT8 model of a QAT-trained chain: weights quantized with the parameters fake
/// quantization used, activations with the observed ranges. Throws gl::Error unless the
/// model came from prepare_qat and saw at least one training batch.
QuantizedMlp convert_qat(const nn::Sequential& qat_model);

}  // namespace gl::quant
