/// @file
/// @brief The forward computations of the ops on a device tensor: each wraps one or two
/// kernels of kernels/cuda/tensor_ops.hpp, with the shapes and strides of the tensors.
///
/// ops/ calls these when its inputs live on a device (`cuda` or `cuda_cpu`) and records
/// autograd as for the CPU; the optimizers call the update steps. Float32 only (int32 for
/// targets and argmax); another type stops with a message saying what to do. Nothing here
/// waits for the device: results stay on it.
#pragma once

#include <utility>
#include <vector>

#include "kernels/cuda/tensor_ops.hpp"
#include "tensor/tensor.hpp"

namespace gl::device {

/// True for a tensor whose storage is on a CUDA device (`cuda` or `cuda_cpu`), whose ops
/// run the kernels of this header.
inline bool on_device(const Tensor& t) { return !t.device().is_cpu(); }

/// @p shape and @p strides as a kernel's StridedIndex; throws beyond kMaxDeviceDims dimensions.
kernels::StridedIndex strided_index(const Shape& shape, const Shape& strides);

/// op(a, b) broadcast to @p out_shape (ops/broadcast.hpp's broadcast_shapes of the two
/// shapes, already checked), a new contiguous tensor on a's device.
Tensor binary(kernels::BinaryOp op, const Tensor& a, const Tensor& b, const Shape& out_shape);
/// s * a.
Tensor scale(const Tensor& a, double s);
/// max(a, 0).
Tensor relu(const Tensor& a);
/// Sums @p t over the dimensions marked in @p reduce, keeping them as extent 1.
Tensor sum_dims(const Tensor& t, const std::vector<bool>& reduce);
/// Row-wise log-softmax of a 2-d tensor.
Tensor log_softmax(const Tensor& x);
/// The gradient of log-softmax from its output @p y and the incoming gradient @p g.
Tensor log_softmax_backward(const Tensor& y, const Tensor& g);
/// Mean of -log_probs[r, targets[r]]: the cross-entropy from log-probabilities (a scalar
/// on the device).
Tensor nll_mean(const Tensor& log_probs, const Tensor& targets);
/// (softmax - onehot(targets)) * g / rows, with the scalar @p g read on the device.
Tensor cross_entropy_backward(const Tensor& log_probs, const Tensor& targets, const Tensor& g);
/// Index of the largest element of each row of a 2-d tensor (int32).
Tensor argmax(const Tensor& x);
/// How many elements of two int32 tensors of one shape are equal, as a float32 scalar on
/// the device (correct predictions, counted without reading them back).
Tensor count_equal(const Tensor& a, const Tensor& b);
/// [M, K] x [K, N] with the SGEMM family's best version; transposed or strided operands
/// are first copied to contiguous ones on the device.
Tensor matmul(const Tensor& a, const Tensor& b);
/// Pass @p pass of the convolution @p g (kernels/cpu/conv/conv.hpp's operands: (x, w) -> y,
/// (dy, w) -> dx, (x, dy) -> dw) by the implicit-GEMM kernel; a new contiguous tensor of
/// @p out_shape on a's device. The geometry is already validated (ops/conv.cpp).
Tensor conv_pass(kernels::conv::ConvPass pass, const kernels::conv::ConvGeometry& g, const Tensor& a, const Tensor& b,
                 const Shape& out_shape);
/// Max pooling of x [N, C, H, W] over the windows @p d: the outputs [N, C, P, Q] and, for
/// the backward pass, where each maximum is in its plane (int32, same shape).
std::pair<Tensor, Tensor> max_pool2d(const Tensor& x, const kernels::PoolDims& d);
/// The input gradient of max_pool2d from the output gradient @p dy and the forward's
/// @p argmax; @p input_shape is x's.
Tensor max_pool2d_backward(const Tensor& dy, const Tensor& argmax, const kernels::PoolDims& d, const Shape& input_shape);
/// self += alpha * other, in place (self contiguous; other of the same shape).
void axpy_(const Tensor& self, const Tensor& other, double alpha);
/// One SGD step on parameter @p p (see optim/optimizer.hpp), all on one device.
void sgd_step(const Tensor& p, const Tensor& g, const Tensor& velocity, float lr, float momentum, float wd);
/// One Adam step on parameter @p p.
void adam_step(const Tensor& p, const Tensor& g, const Tensor& m, const Tensor& v, const kernels::AdamStep& s);

}  // namespace gl::device
