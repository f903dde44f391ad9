// Shape ops: views that reinterpret the same storage. Their gradients undo the view.
#include "autograd/node.hpp"
#include "ops/broadcast.hpp"
#include "ops/op_trace.hpp"
#include "ops/ops.hpp"

namespace gl {
namespace {

Shape infer_shape(const Shape& requested, std::int64_t numel) {
    Shape shape = requested;
    std::int64_t known = 1;
    std::int64_t inferred = -1;
    for (std::size_t d = 0; d < shape.size(); ++d) {
        if (shape[d] == -1) {
            check(inferred < 0, "reshape: only one dimension can be -1 in " + shape_str(requested));
            inferred = static_cast<std::int64_t>(d);
        } else {
            check(shape[d] >= 0, "reshape: negative extent in " + shape_str(requested));
            known *= shape[d];
        }
    }
    if (inferred >= 0) {
        check(known > 0 && numel % known == 0,
              "reshape: cannot infer -1 in " + shape_str(requested) + " for " +
                  std::to_string(numel) + " elements");
        shape[static_cast<std::size_t>(inferred)] = numel / known;
    }
    check(numel_of(shape) == numel, "reshape: shape " + shape_str(requested) + " does not hold " +
                                        std::to_string(numel) + " elements");
    return shape;
}

struct ReshapeBackward final : Node {
    Shape input_shape;
    std::string name() const override { return "ReshapeBackward"; }
    std::vector<Tensor> backward(const Tensor& g) override { return {reshape(g, input_shape)}; }
};

struct TransposeBackward final : Node {
    std::int64_t d0 = 0, d1 = 0;
    std::string name() const override { return "TransposeBackward"; }
    std::vector<Tensor> backward(const Tensor& g) override { return {transpose(g, d0, d1)}; }
};

struct ExpandBackward final : Node {
    Shape input_shape;
    std::string name() const override { return "ExpandBackward"; }
    std::vector<Tensor> backward(const Tensor& g) override { return {sum_to(g, input_shape)}; }
};

std::int64_t normalise_dim(std::int64_t d, std::int64_t rank, const char* op) {
    const std::int64_t axis = d < 0 ? d + rank : d;
    check(axis >= 0 && axis < rank, std::string(op) + ": dimension " + std::to_string(d) +
                                        " is out of range for rank " + std::to_string(rank));
    return axis;
}

}  // namespace

Tensor reshape(const Tensor& a, const Shape& shape) {
    const Shape target = infer_shape(shape, a.numel());
    const Tensor base = a.is_contiguous() ? a : a.clone();
    Tensor out = make_view(base, target, contiguous_strides(target), base.storage_offset());
    if (should_record({a})) {
        auto node = std::make_shared<ReshapeBackward>();
        node->input_shape = a.shape();
        record(out, node, {a});
    }
    return out;
}

// Declared with the tensor; defined here because the copy must be recorded like any
// reshape (reshape records only when grad mode is on and the tensor requires grad).
Tensor Tensor::contiguous() const { return is_contiguous() ? *this : reshape(*this, shape()); }

Tensor transpose(const Tensor& a, std::int64_t d0, std::int64_t d1) {
    const OpTrace trace("transpose");
    const std::int64_t i = normalise_dim(d0, a.dim(), "transpose");
    const std::int64_t j = normalise_dim(d1, a.dim(), "transpose");
    Shape shape = a.shape();
    Shape strides = a.strides();
    std::swap(shape[static_cast<std::size_t>(i)], shape[static_cast<std::size_t>(j)]);
    std::swap(strides[static_cast<std::size_t>(i)], strides[static_cast<std::size_t>(j)]);
    Tensor out = make_view(a, shape, strides, a.storage_offset());
    if (should_record({a})) {
        auto node = std::make_shared<TransposeBackward>();
        node->d0 = i;
        node->d1 = j;
        record(out, node, {a});
    }
    return trace.done({a}, out);
}

Tensor t(const Tensor& a) {
    check(a.dim() == 2, "t(): needs a 2-d tensor, got shape " + shape_str(a.shape()));
    return transpose(a, 0, 1);
}

Tensor expand(const Tensor& a, const Shape& shape) {
    check(broadcast_shapes(a.shape(), shape) == shape,
          "expand: cannot expand " + shape_str(a.shape()) + " to " + shape_str(shape));
    Tensor out = make_view(a, shape, broadcast_strides(a, shape), a.storage_offset());
    if (should_record({a})) {
        auto node = std::make_shared<ExpandBackward>();
        node->input_shape = a.shape();
        record(out, node, {a});
    }
    return out;
}

}  // namespace gl
