// Reductions: the gradient of a sum copies the incoming gradient back to every element
// that was summed (a broadcast, the mirror image of sum_to).
#include <algorithm>
#include <limits>

#include "autograd/node.hpp"
#include "device/device_ops.hpp"
#include "ops/broadcast.hpp"
#include "ops/op_trace.hpp"
#include "ops/ops.hpp"

namespace gl {
namespace {

std::vector<bool> reduce_mask(const Tensor& a, const std::vector<std::int64_t>& dims) {
    std::vector<bool> mask(a.shape().size(), false);
    for (auto d : dims) {
        const std::int64_t axis = d < 0 ? d + a.dim() : d;
        check(axis >= 0 && axis < a.dim(), [&] {
            return "sum/mean: dimension " + std::to_string(d) + " is out of range for shape " + shape_str(a.shape());
        });
        mask[static_cast<std::size_t>(axis)] = true;
    }
    return mask;
}

Shape drop_reduced(const Shape& keep_shape, const std::vector<bool>& mask) {
    Shape out;
    for (std::size_t d = 0; d < mask.size(); ++d)
        if (!mask[d]) out.push_back(keep_shape[d]);
    return out;
}

struct SumBackward final : Node {
    Shape input_shape;
    Shape keepdim_shape;  // the output's shape with reduced dimensions kept as 1
    std::string name() const override { return "SumBackward"; }
    std::vector<Tensor> backward(const Tensor& g) override {
        return {broadcast_copy(reshape(g, keepdim_shape), input_shape)};
    }
};

}  // namespace

Tensor sum(const Tensor& a, const std::vector<std::int64_t>& dims, bool keepdim) {
    const std::vector<bool> mask = reduce_mask(a, dims);
    Tensor kept = sum_dims(a, mask);
    const Shape keep_shape = kept.shape();
    Tensor out = keepdim ? kept : make_view(kept, drop_reduced(keep_shape, mask),
                                            contiguous_strides(drop_reduced(keep_shape, mask)), 0);
    if (should_record({a})) {
        auto node = std::make_shared<SumBackward>();
        node->input_shape = a.shape();
        node->keepdim_shape = keep_shape;
        record(out, node, {a});
    }
    return out;
}

Tensor sum(const Tensor& a) {
    std::vector<std::int64_t> all(static_cast<std::size_t>(a.dim()));
    for (std::int64_t d = 0; d < a.dim(); ++d) all[static_cast<std::size_t>(d)] = d;
    return sum(a, all, false);
}

Tensor mean(const Tensor& a, const std::vector<std::int64_t>& dims, bool keepdim) {
    const std::vector<bool> mask = reduce_mask(a, dims);
    std::int64_t count = 1;
    for (std::size_t d = 0; d < mask.size(); ++d)
        if (mask[d]) count *= a.shape()[d];
    check(count > 0, "mean: the reduced dimensions are empty");
    return mul(sum(a, dims, keepdim), 1.0 / static_cast<double>(count));
}

Tensor mean(const Tensor& a) {
    const OpTrace trace("mean");
    check(a.numel() > 0, "mean: the tensor is empty");
    return trace.done({a}, mul(sum(a), 1.0 / static_cast<double>(a.numel())));
}

Tensor argmax(const Tensor& a) {
    check(a.dim() >= 1 && a.size(-1) > 0, "argmax: needs a non-empty last dimension");
    if (device::on_device(a)) return device::argmax(a);
    const Tensor c = a.contiguous();
    const std::int64_t cols = c.size(-1);
    const std::int64_t rows = c.numel() / cols;
    Shape out_shape(c.shape().begin(), c.shape().end() - 1);
    Tensor out = empty(out_shape, DType::Int32);
    std::int32_t* dst = out.data<std::int32_t>();
    dispatch_floating(c.dtype(), "argmax", [&]<class T>() {
        const T* src = c.data<T>();
        for (std::int64_t r = 0; r < rows; ++r) {
            const T* row = src + r * cols;
            dst[r] = static_cast<std::int32_t>(std::max_element(row, row + cols) - row);
        }
    });
    return out;
}

}  // namespace gl
