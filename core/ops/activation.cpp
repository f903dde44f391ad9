// ReLU: max(x, 0). Its derivative is 1 where the input was positive and 0 elsewhere, so
// the backward only needs to know where the input was positive.
#include "autograd/node.hpp"
#include "device/device_ops.hpp"
#include "ops/broadcast.hpp"
#include "kernels/cpu/elementwise.hpp"
#include "ops/op_trace.hpp"
#include "ops/ops.hpp"

namespace gl {
namespace {

struct ReluBackward final : Node {
    Tensor output;  // relu(x) > 0 exactly where x > 0, so the output is enough to save
    std::string name() const override { return "ReluBackward"; }
    std::vector<Tensor> backward(const Tensor& g) override {
        if (device::on_device(g)) return {device::binary(kernels::BinaryOp::relu_mask, g, output, g.shape())};
        // LAB 01 BEGIN: relu backward
        // Pass the gradient through where the unit was active, block it elsewhere.
        return {dispatch_floating(g.dtype(), "relu backward", [&]<class T>() {
            return binary_broadcast<T>(g, output, [](T grad, T y) { return y > T(0) ? grad : T(0); });
        })};
        // LAB 01 END
    }
};

}  // namespace

Tensor relu(const Tensor& a) {
    const OpTrace trace("relu");
    Tensor out;
    if (device::on_device(a)) {
        out = device::relu(a);
    } else if (a.dtype() == DType::Float32 && a.is_contiguous()) {  // the bandwidth-bound kernel
        out = empty(a.shape(), a.dtype());
        kernels::relu(a.data<float>(), out.data<float>(), a.numel());
    } else {
        out = dispatch_floating(a.dtype(), "relu", [&]<class T>() {
            return unary_map<T>(a, [](T x) { return x > T(0) ? x : T(0); });
        });
    }
    if (should_record({a})) {
        auto node = std::make_shared<ReluBackward>();
        node->output = save_for_backward(out);
        record(out, node, {a});
    }
    return trace.done({a}, out);
}

}  // namespace gl
