/// @file
/// @brief Fake quantization for quantization-aware training (claim Q-1): quantize and
/// dequantize in one step, so the forward pass sees exactly the values the INT8 model
/// will compute with, while everything stays float32 and differentiable.
///
/// Owns: the fake-quantize op and its backward, the straight-through estimator (STE):
/// rounding has zero derivative almost everywhere, so the backward pretends it is the
/// identity, except where the input was clipped to the range's ends, where the output
/// does not move with the input and the gradient is 0. Knows nothing about modules or
/// observers (the caller chooses the parameters).
#pragma once

#include <vector>

#include "numerics/quantize.hpp"
#include "tensor/tensor.hpp"

namespace gl {

/// dequantize(quantize(x)) element-wise, float32. One entry in @p params quantizes the
/// whole tensor; otherwise @p params has one entry per slice along dimension 0 (per
/// output channel of a [out, in] weight). Throws gl::Error for NaN inputs, a dtype other
/// than float32, or a parameter count that fits neither.
Tensor fake_quantize(const Tensor& x, const std::vector<quant::QParams>& params, quant::QRange range);

/// The real interval that @p p and @p range represent without clipping:
/// [scale * (qmin - zero_point), scale * (qmax - zero_point)].
std::pair<float, float> representable_range(quant::QParams p, quant::QRange range);

/// The straight-through estimator with clipping: @p grad where the input @p x lay inside
/// the representable range of its channel's parameters (ends included), 0 outside.
/// @p x and @p grad are [n] values split into params.size() equal rows.
std::vector<float> fake_quantize_backward(const std::vector<float>& x, const std::vector<float>& grad,
                                          const std::vector<quant::QParams>& params, quant::QRange range);

}  // namespace gl
