// Casting between floating types, differentiably: the gradient of a cast is the incoming
// gradient cast back to the input's type. That backward cast is where mixed precision
// loses small gradients: an FP32 gradient below FP16's smallest subnormal (2^-24, about
// 6e-8) becomes zero there, which is what loss scaling prevents (claim FP-2).
#include <utility>

#include "autograd/node.hpp"
#include "ops/ops.hpp"

namespace gl {
namespace {

thread_local GradientCastObserver t_observer;

struct CastBackward final : Node {
    DType input_dtype = DType::Float32;
    std::string name() const override { return "CastBackward"; }
    std::vector<Tensor> backward(const Tensor& g) override {
        Tensor narrowed = to_dtype(g, input_dtype);
        if (t_observer && size_of(input_dtype) < size_of(g.dtype())) t_observer(g, narrowed);
        return {narrowed};
    }
};

}  // namespace

Tensor cast(const Tensor& a, DType dtype) {
    if (a.dtype() == dtype) return a;
    check(is_differentiable(a.dtype()) && is_differentiable(dtype),
          "cast: only floating types cast differentiably (" + name_of(a.dtype()) + " -> " + name_of(dtype) +
              "); use to_dtype for integer types");
    Tensor out = to_dtype(a, dtype);
    if (should_record({a})) {
        auto node = std::make_shared<CastBackward>();
        node->input_dtype = a.dtype();
        record(out, node, {a});
    }
    return out;
}

GradientCastObserver set_gradient_cast_observer(GradientCastObserver observer) {
    return std::exchange(t_observer, std::move(observer));
}

}  // namespace gl
