/// @file
/// @brief Summing gradients: the one piece of arithmetic autograd does itself.
///
/// Owns: adding a gradient into another, in place or into a new tensor, outside the
/// graph. The engine sums the gradients that reach a node along several paths, and a
/// leaf's accumulator adds each step's gradient into its grad; both happen here, on the
/// kernels directly, so autograd needs nothing from ops/ (which sits above it).
#pragma once

#include "tensor/tensor.hpp"

namespace gl {

/// self += alpha * other in place, outside autograd (for accumulation and optimizers).
/// @p other must have self's shape and dtype; @p self must be contiguous.
void add_(const Tensor& self, const Tensor& other, double alpha = 1.0);

/// a + b as a new contiguous tensor, outside autograd: the sum of two gradients of the
/// same shape and dtype (neither operand is changed).
Tensor add_gradients(const Tensor& a, const Tensor& b);

}  // namespace gl
