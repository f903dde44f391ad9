/// @file
/// @brief Differentiable tensor operations. Each op's forward and backward sit side by
/// side in one file of this folder.
///
/// Owns: the math of each op and its gradient. The loops that do the work are in
/// kernels/; the graph bookkeeping is in autograd/.
#pragma once

#include <functional>
#include <vector>

#include "autograd/accumulate.hpp"
#include "tensor/tensor.hpp"

namespace gl {

// ---- Element-wise arithmetic with NumPy broadcasting (elementwise.cpp) ----
/// a + b.
Tensor add(const Tensor& a, const Tensor& b);
/// a - b.
Tensor sub(const Tensor& a, const Tensor& b);
/// a * b, element by element.
Tensor mul(const Tensor& a, const Tensor& b);
/// a * s for a number s.
Tensor mul(const Tensor& a, double s);
/// -a.
Tensor neg(const Tensor& a);
/// Sums @p grad over the dimensions that broadcasting expanded, so the result has
/// @p shape: the gradient of broadcasting a tensor of @p shape up to grad's shape.
Tensor sum_to(const Tensor& grad, const Shape& shape);
// add_(self, other, alpha), in place and outside autograd, is declared in
// autograd/accumulate.hpp (included above): autograd sums gradients with it.

// ---- Casts between floating types (cast.cpp) ----
/// @p a converted to @p dtype (any of float64, float32, float16, bfloat16), recorded for
/// autograd: the backward casts the gradient back to @p a's type. Returns @p a itself
/// when it already has @p dtype.
Tensor cast(const Tensor& a, DType dtype);
/// Observes each gradient that the backward of cast() narrows to a smaller type: called
/// with the gradient before and after narrowing.
using GradientCastObserver = std::function<void(const Tensor& wide, const Tensor& narrow)>;
/// Installs @p observer for this thread (an empty one removes it); returns the previous one.
GradientCastObserver set_gradient_cast_observer(GradientCastObserver observer);

// ---- Linear algebra (matmul.cpp) ----
/// The matrix product of two 2-d tensors [M, K] x [K, N] -> [M, N], through the
/// default GEMM kernel. Transposed views are passed to the kernel without copying.
/// float16/bfloat16 operands go to the low-precision GEMM (FP32 accumulation, the result
/// rounded once to the operands' type). Under autocast (ops/autocast.hpp) a float32
/// operand is cast to the autocast type first and the result cast back to float32.
Tensor matmul(const Tensor& a, const Tensor& b);

// ---- Reductions (reduce.cpp) ----
/// Sum of all elements (a scalar).
Tensor sum(const Tensor& a);
/// Sum over @p dims (negative dims count from the end).
Tensor sum(const Tensor& a, const std::vector<std::int64_t>& dims, bool keepdim = false);
/// Mean of all elements.
Tensor mean(const Tensor& a);
/// Mean over @p dims.
Tensor mean(const Tensor& a, const std::vector<std::int64_t>& dims, bool keepdim = false);
/// Index of the largest element along the last dimension (int32; not differentiable).
Tensor argmax(const Tensor& a);

// ---- Shape (shape.cpp) ----
/// The same elements with another shape; one extent may be -1 (inferred). A view when
/// @p a is contiguous, a copy otherwise.
Tensor reshape(const Tensor& a, const Shape& shape);
/// A view with dimensions @p d0 and @p d1 swapped.
Tensor transpose(const Tensor& a, std::int64_t d0, std::int64_t d1);
/// The transpose of a 2-d tensor (a view).
Tensor t(const Tensor& a);
/// A view of @p a broadcast to @p shape (stride 0 along expanded dimensions).
Tensor expand(const Tensor& a, const Shape& shape);

// ---- Activations and losses (activation.cpp, loss.cpp) ----
/// max(a, 0).
Tensor relu(const Tensor& a);
/// log(softmax(x)) along the last dimension of a 2-d tensor, computed stably.
Tensor log_softmax(const Tensor& x);
/// Mean cross-entropy of 2-d @p logits [B, C] against int32 class @p targets [B]:
/// fused log-softmax and negative log-likelihood, stable for large logits.
Tensor cross_entropy(const Tensor& logits, const Tensor& targets);

// ---- Operators ----
/// add(a, b)
inline Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
/// sub(a, b)
inline Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }
/// mul(a, b)
inline Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }
/// mul(a, s)
inline Tensor operator*(const Tensor& a, double s) { return mul(a, s); }
/// mul(a, s)
inline Tensor operator*(double s, const Tensor& a) { return mul(a, s); }
/// neg(a)
inline Tensor operator-(const Tensor& a) { return neg(a); }
/// a + s for a number s (broadcast as a scalar of a's dtype).
inline Tensor operator+(const Tensor& a, double s) { return add(a, scalar(s, a.dtype())); }
/// a - s for a number s.
inline Tensor operator-(const Tensor& a, double s) { return sub(a, scalar(s, a.dtype())); }

}  // namespace gl
