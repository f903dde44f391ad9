// Element-wise arithmetic with broadcasting: forward and backward side by side.
//
// Broadcasting lets a [64, 128] activation be added to a [128] bias as if the bias were
// copied 64 times. The gradient of that copy is a sum: every copy of a bias element
// received a gradient, and they all flow back into the one element.
#include <vector>

#include "autograd/node.hpp"
#include "device/device_ops.hpp"
#include "kernels/cpu/elementwise.hpp"
#include "ops/broadcast.hpp"
#include "ops/op_trace.hpp"
#include "ops/ops.hpp"

namespace gl {
namespace {

void check_same_dtype(const Tensor& a, const Tensor& b, const char* op) {
    check(a.dtype() == b.dtype(), [&] {
        return std::string(op) + ": operands have different dtypes (" + name_of(a.dtype()) + " and " +
               name_of(b.dtype()) + "); convert one with to_dtype";
    });
    check_same_device(op, {&a, &b}, {"a", "b"});
}

struct AddBackward final : Node {
    Shape a_shape, b_shape;
    std::string name() const override { return "AddBackward"; }
    std::vector<Tensor> backward(const Tensor& g) override {
        // LAB 01 BEGIN: add backward
        // d(a + b)/da = 1, so a's gradient is g itself, summed over the axes along
        // which a was broadcast (sum_to); the same for b.
        return {sum_to(g, a_shape), sum_to(g, b_shape)};
        // LAB 01 END
    }
};

struct SubBackward final : Node {
    Shape a_shape, b_shape;
    std::string name() const override { return "SubBackward"; }
    std::vector<Tensor> backward(const Tensor& g) override {
        return {sum_to(g, a_shape), sum_to(neg(g), b_shape)};
    }
};

struct MulBackward final : Node {
    Tensor a, b;
    std::string name() const override { return "MulBackward"; }
    std::vector<Tensor> backward(const Tensor& g) override {
        return {sum_to(mul(g, b), a.shape()), sum_to(mul(g, a), b.shape())};
    }
};

struct ScaleBackward final : Node {
    double s = 1.0;
    std::string name() const override { return "ScaleBackward"; }
    std::vector<Tensor> backward(const Tensor& g) override { return {mul(g, s)}; }
};

// The two float32 additions of a training step, on the tuned kernels (kernels/cpu/
// elementwise.hpp, timed by claim MEM-1): operands of one shape, and a bias row added to
// every row of a matrix (Linear's forward). Undefined for every other case.
Tensor add_float32(const Tensor& a, const Tensor& b) {
    if (a.dtype() != DType::Float32 || !a.is_contiguous() || !b.is_contiguous()) return {};
    if (a.shape() == b.shape()) {
        Tensor out = empty(a.shape(), DType::Float32);
        kernels::add(a.data<float>(), b.data<float>(), out.data<float>(), a.numel());
        return out;
    }
    const bool bias_row = a.dim() == 2 && b.dim() == 1 && b.shape()[0] == a.shape()[1];
    if (!bias_row) return {};
    Tensor out = empty(a.shape(), DType::Float32);
    kernels::add_row(a.data<float>(), b.data<float>(), out.data<float>(), a.shape()[0], a.shape()[1]);
    return out;
}

// The same ops on a device tensor: one broadcast kernel (device/device_ops.hpp).
Tensor binary_on_device(kernels::BinaryOp op, const Tensor& a, const Tensor& b) {
    return device::binary(op, a, b, broadcast_shapes(a.shape(), b.shape()));
}

}  // namespace

Tensor sum_to(const Tensor& grad, const Shape& shape) {
    check(shape.size() <= grad.shape().size(), [&] {
        return "sum_to: cannot reduce a gradient of shape " + shape_str(grad.shape()) + " to the larger rank of " +
               shape_str(shape);
    });
    // LAB 01 BEGIN: reduce a gradient over broadcast axes (sum_to)
    // Broadcasting aligned shape with grad.shape() from the right. Sum over the leading
    // dimensions shape does not have, and over every dimension where shape has extent 1
    // but grad does not; then reshape to shape.
    if (grad.shape() == shape) return grad;
    const std::size_t lead = grad.shape().size() - shape.size();
    std::vector<std::int64_t> dims;
    for (std::size_t d = 0; d < grad.shape().size(); ++d) {
        const bool is_leading = d < lead;
        if (is_leading || (shape[d - lead] == 1 && grad.shape()[d] != 1))
            dims.push_back(static_cast<std::int64_t>(d));
    }
    return reshape(sum(grad, dims, /*keepdim=*/true), shape);
    // LAB 01 END
}

Tensor add(const Tensor& a, const Tensor& b) {
    const OpTrace trace("add");
    check_same_dtype(a, b, "add");
    Tensor out = device::on_device(a) ? binary_on_device(kernels::BinaryOp::add, a, b) : add_float32(a, b);
    if (!out.defined())
        out = dispatch_floating(a.dtype(), "add", [&]<class T>() {
            return binary_broadcast<T>(a, b, [](T x, T y) { return x + y; });
        });
    if (should_record({a, b})) {
        auto node = std::make_shared<AddBackward>();
        node->a_shape = a.shape();
        node->b_shape = b.shape();
        record(out, node, {a, b});
    }
    return trace.done({a, b}, out);
}

Tensor sub(const Tensor& a, const Tensor& b) {
    const OpTrace trace("sub");
    check_same_dtype(a, b, "sub");
    Tensor out = device::on_device(a) ? binary_on_device(kernels::BinaryOp::sub, a, b)
                                      : dispatch_floating(a.dtype(), "sub", [&]<class T>() {
                                            return binary_broadcast<T>(a, b, [](T x, T y) { return x - y; });
                                        });
    if (should_record({a, b})) {
        auto node = std::make_shared<SubBackward>();
        node->a_shape = a.shape();
        node->b_shape = b.shape();
        record(out, node, {a, b});
    }
    return trace.done({a, b}, out);
}

Tensor mul(const Tensor& a, const Tensor& b) {
    const OpTrace trace("mul");
    check_same_dtype(a, b, "mul");
    Tensor out = device::on_device(a) ? binary_on_device(kernels::BinaryOp::mul, a, b)
                                      : dispatch_floating(a.dtype(), "mul", [&]<class T>() {
                                            return binary_broadcast<T>(a, b, [](T x, T y) { return x * y; });
                                        });
    if (should_record({a, b})) {
        auto node = std::make_shared<MulBackward>();
        node->a = save_for_backward(a);
        node->b = save_for_backward(b);
        record(out, node, {a, b});
    }
    return trace.done({a, b}, out);
}

Tensor mul(const Tensor& a, double s) {
    const OpTrace trace("mul");
    Tensor out = device::on_device(a) ? device::scale(a, s) : dispatch_floating(a.dtype(), "mul", [&]<class T>() {
        const T factor = static_cast<T>(s);
        return unary_map<T>(a, [factor](T x) { return x * factor; });
    });
    if (should_record({a})) {
        auto node = std::make_shared<ScaleBackward>();
        node->s = s;
        record(out, node, {a});
    }
    // A number argument becomes a scalar tensor input, made only while tracing.
    return trace.done({a, trace.active() ? scalar(s, a.dtype()) : Tensor()}, out);
}

Tensor neg(const Tensor& a) {
    const OpTrace trace("neg");
    return trace.done({a}, mul(a, -1.0));
}

}  // namespace gl
