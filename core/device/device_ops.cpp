// Device ops: shapes and strides in, one kernel launch (or two) out. The kernels are in
// kernels/cuda/tensor_ops.cuh; which runtime runs them is the tensor's device.
#include "device/device_ops.hpp"

#include <string>

#include "device/device.hpp"

namespace gl::device {
namespace {

const kernels::DeviceKernels& kernels_of(const Tensor& t) { return kernels_for(t.device()); }

void check_float32(const Tensor& t, const char* op) {
    check(t.dtype() == DType::Float32,
          std::string(op) + " on " + t.device().str() + ": device kernels compute in float32, got " +
              name_of(t.dtype()) + "; cast with to_dtype(x, float32) or run it on the CPU (x.cpu())");
}

void check_rank(std::size_t rank, const char* op) {
    check(rank <= static_cast<std::size_t>(kernels::kMaxDeviceDims),
          std::string(op) + " on a device: at most " + std::to_string(kernels::kMaxDeviceDims) +
              " dimensions, got " + std::to_string(rank) + "; reshape first");
}

/// @p t itself when contiguous, else a contiguous copy on its device.
Tensor dense(const Tensor& t) { return t.is_contiguous() ? t : device_clone(t); }

/// @p t's strides for reading it as @p target: 0 along broadcast (and missing) dimensions.
void broadcast_strides_into(const Tensor& t, const Shape& target, std::int64_t* strides) {
    const std::size_t lead = target.size() - t.shape().size();
    for (std::size_t d = 0; d < target.size(); ++d) strides[d] = 0;
    for (std::size_t d = 0; d < t.shape().size(); ++d)
        strides[lead + d] = t.shape()[d] == 1 ? 0 : t.strides()[d];
}

void check_2d(const Tensor& x, const char* op) {
    check(x.dim() == 2 && x.shape()[1] > 0,
          std::string(op) + ": expects 2-d [batch, classes] input, got shape " + shape_str(x.shape()));
}

}  // namespace

kernels::StridedIndex strided_index(const Shape& shape, const Shape& strides) {
    check_rank(shape.size(), "a strided copy");
    kernels::StridedIndex index;
    index.rank = static_cast<int>(shape.size());
    for (std::size_t d = 0; d < shape.size(); ++d) {
        index.shape[d] = shape[d];
        index.strides[d] = strides[d];
    }
    return index;
}

Tensor binary(kernels::BinaryOp op, const Tensor& a, const Tensor& b, const Shape& out_shape) {
    check_float32(a, "an element-wise op");
    check_float32(b, "an element-wise op");
    check_rank(out_shape.size(), "an element-wise op");
    kernels::BroadcastIndex index;
    index.rank = static_cast<int>(out_shape.size());
    for (std::size_t d = 0; d < out_shape.size(); ++d) index.shape[d] = out_shape[d];
    broadcast_strides_into(a, out_shape, index.a_strides);
    broadcast_strides_into(b, out_shape, index.b_strides);
    Tensor out = empty(out_shape, DType::Float32, a.device());
    kernels_of(a).binary(op, out.numel(), index, a.data_ptr<float>(), b.data_ptr<float>(), out.data_ptr<float>());
    return out;
}

Tensor scale(const Tensor& a, double s) {
    check_float32(a, "mul");
    const Tensor c = dense(a);
    Tensor out = empty(a.shape(), DType::Float32, a.device());
    kernels_of(a).scale(a.numel(), static_cast<float>(s), c.data_ptr<float>(), out.data_ptr<float>());
    return out;
}

Tensor relu(const Tensor& a) {
    check_float32(a, "relu");
    const Tensor c = dense(a);
    Tensor out = empty(a.shape(), DType::Float32, a.device());
    kernels_of(a).relu(a.numel(), c.data_ptr<float>(), out.data_ptr<float>());
    return out;
}

Tensor sum_dims(const Tensor& t, const std::vector<bool>& reduce) {
    check_float32(t, "sum");
    check_rank(t.shape().size(), "sum");
    kernels::ReduceIndex index;
    index.rank = t.dim();
    Shape out_shape = t.shape();
    for (std::size_t d = 0; d < reduce.size(); ++d) {
        index.shape[d] = t.shape()[d];
        index.strides[d] = t.strides()[d];
        index.reduced[d] = reduce[d];
        if (reduce[d]) out_shape[d] = 1;
    }
    Tensor out = empty(out_shape, DType::Float32, t.device());
    if (t.numel() == 0) return zeros(out_shape, DType::Float32, t.device());  // an empty sum is 0
    check(out.numel() < (std::int64_t(1) << 31), "sum on a device: at most 2^31 - 1 outputs");
    kernels_of(t).sum(index, out.numel(), t.data_ptr<float>(), out.data_ptr<float>());
    return out;
}

Tensor log_softmax(const Tensor& x) {
    check_2d(x, "log_softmax");
    check_float32(x, "log_softmax");
    const Tensor c = dense(x);
    Tensor out = empty(x.shape(), DType::Float32, x.device());
    kernels_of(x).log_softmax_rows(x.shape()[0], x.shape()[1], c.data_ptr<float>(), out.data_ptr<float>());
    return out;
}

Tensor log_softmax_backward(const Tensor& y, const Tensor& g) {
    const Tensor gc = dense(g);
    Tensor grad = empty(y.shape(), DType::Float32, y.device());
    kernels_of(y).log_softmax_backward(y.shape()[0], y.shape()[1], y.data_ptr<float>(), gc.data_ptr<float>(),
                                       grad.data_ptr<float>());
    return grad;
}

Tensor nll_mean(const Tensor& log_probs, const Tensor& targets) {
    const std::int64_t rows = log_probs.shape()[0], cols = log_probs.shape()[1];
    const Tensor tc = dense(targets);
    Tensor per_row = empty({rows}, DType::Float32, log_probs.device());
    kernels_of(log_probs).nll_rows(rows, cols, log_probs.data_ptr<float>(), tc.data_ptr<std::int32_t>(),
                                   per_row.data_ptr<float>());
    const Tensor total = sum_dims(per_row, {true});
    return scale(make_view(total, {}, {}, 0), 1.0 / static_cast<double>(rows));
}

Tensor cross_entropy_backward(const Tensor& log_probs, const Tensor& targets, const Tensor& g) {
    const std::int64_t rows = log_probs.shape()[0], cols = log_probs.shape()[1];
    Tensor grad = empty(log_probs.shape(), DType::Float32, log_probs.device());
    kernels_of(log_probs).cross_entropy_backward(rows, cols, log_probs.data_ptr<float>(),
                                                 targets.data_ptr<std::int32_t>(), dense(g).data_ptr<float>(),
                                                 grad.data_ptr<float>());
    return grad;
}

Tensor argmax(const Tensor& x) {
    check(x.dim() == 2 && x.size(-1) > 0, "argmax on a device: needs a 2-d tensor with a non-empty last dimension");
    check_float32(x, "argmax");
    const Tensor c = dense(x);
    Tensor out = empty({x.shape()[0]}, DType::Int32, x.device());
    kernels_of(x).argmax_rows(x.shape()[0], x.shape()[1], c.data_ptr<float>(), out.data_ptr<std::int32_t>());
    return out;
}

Tensor count_equal(const Tensor& a, const Tensor& b) {
    check(a.dtype() == DType::Int32 && b.dtype() == DType::Int32 && a.shape() == b.shape(),
          "count_equal: needs two int32 tensors of one shape");
    check_same_device("count_equal", {&a, &b}, {"a", "b"});
    Tensor flags = empty(a.shape(), DType::Float32, a.device());
    kernels_of(a).equal(a.numel(), dense(a).data_ptr<std::int32_t>(), dense(b).data_ptr<std::int32_t>(),
                        flags.data_ptr<float>());
    const Tensor flat = make_view(flags, {flags.numel()}, {1}, 0);
    return make_view(sum_dims(flat, {true}), {}, {}, 0);
}

Tensor matmul(const Tensor& a, const Tensor& b) {
    check_float32(a, "matmul");
    check_float32(b, "matmul");
    const std::int64_t M = a.shape()[0], K = a.shape()[1], N = b.shape()[1];
    check(M * K < (std::int64_t(1) << 31) && K * N < (std::int64_t(1) << 31) && M * N < (std::int64_t(1) << 31),
          "matmul on a device: the CUDA kernels index with int, so each matrix must have fewer than 2^31 elements");
    Tensor out = empty({M, N}, DType::Float32, a.device());
    if (M == 0 || N == 0) return out;
    if (K == 0) return zeros({M, N}, DType::Float32, a.device());
    // The kernels read row-major operands: a transposed view (Linear's weight) is copied
    // once, on the device; O(MK + KN) against the product's O(MNK).
    const Tensor A = dense(a), B = dense(b);
    kernels_of(a).sgemm(static_cast<int>(M), static_cast<int>(N), static_cast<int>(K), A.data_ptr<float>(),
                        B.data_ptr<float>(), out.data_ptr<float>());
    return out;
}

Tensor conv_pass(kernels::conv::ConvPass pass, const kernels::conv::ConvGeometry& g, const Tensor& a, const Tensor& b,
                 const Shape& out_shape) {
    check_float32(a, "conv2d");
    check_float32(b, "conv2d");
    Tensor out = empty(out_shape, DType::Float32, a.device());
    if (out.numel() == 0) return out;
    const Tensor A = dense(a), B = dense(b);
    kernels_of(a).conv(pass, g, A.data_ptr<float>(), B.data_ptr<float>(), out.data_ptr<float>());
    return out;
}

std::pair<Tensor, Tensor> max_pool2d(const Tensor& x, const kernels::PoolDims& d) {
    check_float32(x, "max_pool2d");
    const Shape out_shape = {x.shape()[0], x.shape()[1], d.P, d.Q};
    Tensor y = empty(out_shape, DType::Float32, x.device());
    Tensor where = empty(out_shape, DType::Int32, x.device());
    const Tensor c = dense(x);
    kernels_of(x).max_pool_forward(d, c.data_ptr<float>(), y.data_ptr<float>(), where.data_ptr<std::int32_t>());
    return {y, where};
}

Tensor max_pool2d_backward(const Tensor& dy, const Tensor& argmax, const kernels::PoolDims& d, const Shape& input_shape) {
    check_float32(dy, "max_pool2d backward");
    Tensor dx = empty(input_shape, DType::Float32, dy.device());
    const Tensor g = dense(dy);
    kernels_of(dy).max_pool_backward(d, g.data_ptr<float>(), argmax.data_ptr<std::int32_t>(), dx.data_ptr<float>());
    return dx;
}

void axpy_(const Tensor& self, const Tensor& other, double alpha) {
    check_float32(self, "add_");
    const Tensor src = dense(other);
    kernels_of(self).axpy(self.numel(), static_cast<float>(alpha), src.data_ptr<float>(), self.data_ptr<float>());
}

void sgd_step(const Tensor& p, const Tensor& g, const Tensor& velocity, float lr, float momentum, float wd) {
    check_float32(p, "SGD");
    kernels_of(p).sgd_step(p.numel(), p.data_ptr<float>(), dense(g).data_ptr<float>(), velocity.data_ptr<float>(),
                           lr, momentum, wd);
}

void adam_step(const Tensor& p, const Tensor& g, const Tensor& m, const Tensor& v, const kernels::AdamStep& s) {
    check_float32(p, "Adam");
    kernels_of(p).adam_step(p.numel(), p.data_ptr<float>(), dense(g).data_ptr<float>(), m.data_ptr<float>(),
                            v.data_ptr<float>(), s);
}

}  // namespace gl::device
