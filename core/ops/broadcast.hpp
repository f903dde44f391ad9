/// @file
/// @brief Element-wise loops over whole tensors with NumPy broadcasting.
///
/// Owns: the broadcasting rules and the loops that apply them to tensors of any shape
/// and strides. They live with the ops, not in kernels/, because they walk tensors
/// (kernels/ sees only pointers and counts); the differentiable functions in this
/// folder call them, and they record nothing for autograd themselves.
#pragma once

#include "parallel/thread_pool.hpp"
#include "tensor/tensor.hpp"

namespace gl {

/// The shape two operands broadcast to (NumPy rules: align from the right; each pair of
/// extents must be equal or one of them 1). Throws a clear error otherwise.
Shape broadcast_shapes(const Shape& a, const Shape& b);

/// Strides that read @p t as if it had shape @p target: 0 along broadcast dimensions.
Shape broadcast_strides(const Tensor& t, const Shape& target);

/// Elements per thread below which the same-shape loop of binary_broadcast stays on one
/// thread (waking a worker costs microseconds).
inline constexpr std::int64_t kBroadcastGrain = 1 << 16;

/// out[i] = fn(a[i'], b[i'']) over the broadcast shape, as a new contiguous tensor.
/// T must match both operands' dtype.
template <class T, class Fn>
Tensor binary_broadcast(const Tensor& a, const Tensor& b, Fn fn) {
    const Shape out_shape = broadcast_shapes(a.shape(), b.shape());
    Tensor out = empty(out_shape, a.dtype());
    const T* pa = a.data<T>();
    const T* pb = b.data<T>();
    T* po = out.data<T>();
    const std::int64_t n = out.numel();
    if (n == 0) return out;
    if (a.shape() == out_shape && b.shape() == out_shape && a.is_contiguous() &&
        b.is_contiguous()) {  // the common, fast case: one pass, on every thread when it is long
        // (one core alone does not draw the memory bandwidth: a CNN's ReLU backward over
        // 1.6 million elements took 13% of its training step on one thread)
        parallel_for(n, kBroadcastGrain, [&](std::int64_t first, std::int64_t last) {
            for (std::int64_t i = first; i < last; ++i) po[i] = fn(pa[i], pb[i]);
        });
        return out;
    }
    if (out_shape.empty()) {
        po[0] = fn(pa[0], pb[0]);
        return out;
    }
    // A row vector added to every row (a bias): one contiguous loop per row.
    const std::int64_t inner = out_shape.back();
    const auto is_row = [&](const Tensor& t) { return t.is_contiguous() && t.numel() == inner; };
    if (a.shape() == out_shape && a.is_contiguous() && is_row(b)) {
        for (std::int64_t r = 0; r < n / inner; ++r)
            for (std::int64_t j = 0; j < inner; ++j) po[r * inner + j] = fn(pa[r * inner + j], pb[j]);
        return out;
    }
    if (b.shape() == out_shape && b.is_contiguous() && is_row(a)) {
        for (std::int64_t r = 0; r < n / inner; ++r)
            for (std::int64_t j = 0; j < inner; ++j) po[r * inner + j] = fn(pa[j], pb[r * inner + j]);
        return out;
    }
    const Shape sa = broadcast_strides(a, out_shape);
    const Shape sb = broadcast_strides(b, out_shape);
    // Loop over rows of the innermost dimension; an odometer walks the outer dimensions.
    const std::size_t last = out_shape.size() - 1;
    const std::int64_t rows = n / inner;
    Shape index(last, 0);
    std::int64_t off_a = 0, off_b = 0;
    for (std::int64_t r = 0; r < rows; ++r) {
        T* row = po + r * inner;
        for (std::int64_t j = 0; j < inner; ++j) row[j] = fn(pa[off_a + j * sa[last]], pb[off_b + j * sb[last]]);
        for (std::size_t d = last; d-- > 0;) {
            if (++index[d] < out_shape[d]) {
                off_a += sa[d];
                off_b += sb[d];
                break;
            }
            off_a -= sa[d] * (out_shape[d] - 1);
            off_b -= sb[d] * (out_shape[d] - 1);
            index[d] = 0;
        }
    }
    return out;
}

/// out[i] = fn(a[i]) as a new contiguous tensor of a's shape.
template <class T, class Fn>
Tensor unary_map(const Tensor& a, Fn fn) {
    Tensor out = empty(a.shape(), a.dtype());
    T* po = out.data<T>();
    const T* pa = a.data<T>();
    if (a.is_contiguous()) {
        for (std::int64_t i = 0; i < a.numel(); ++i) po[i] = fn(pa[i]);
    } else {
        for_each_offset(a, [&](std::int64_t i, std::int64_t off) { po[i] = fn(pa[off]); });
    }
    return out;
}

/// Sums @p t over the dimensions marked in @p reduce (one flag per dimension), keeping
/// them as extent 1. Accumulates in double so float32 sums stay accurate.
Tensor sum_dims(const Tensor& t, const std::vector<bool>& reduce);

/// A contiguous copy of @p t broadcast to @p shape.
Tensor broadcast_copy(const Tensor& t, const Shape& shape);

}  // namespace gl
