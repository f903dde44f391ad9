#include "autograd/node.hpp"

#include "autograd/grad_mode.hpp"
#include "memory/tracking_allocator.hpp"
#include "ops/ops.hpp"

namespace gl {

std::vector<Tensor> AccumulateGrad::backward(const Tensor& grad_output) {
    auto leaf = leaf_.lock();
    if (!leaf) return {};  // the parameter is gone; nothing to accumulate into
    Tensor leaf_tensor(leaf);
    check(grad_output.shape() == leaf->shape,
          "autograd: gradient of shape " + shape_str(grad_output.shape()) +
              " for a leaf of shape " + shape_str(leaf->shape) +
              "; a backward function returned the wrong shape");
    if (!leaf->grad) {
        // Own the gradient: the incoming tensor may be shared with other nodes.
        memory::MemoryCategoryScope gradient_bytes(memory::MemoryCategory::Gradient);
        leaf->grad = grad_output.clone().impl_ptr();
    } else {
        add_(Tensor(leaf->grad), grad_output);
    }
    for (auto& hook : leaf->grad_hooks) hook(Tensor(leaf->grad));
    return {};
}

std::shared_ptr<Node> gradient_edge(const Tensor& t) {
    if (!t.defined()) return nullptr;
    TensorImpl& impl = t.impl();
    if (impl.grad_fn) return impl.grad_fn;
    if (!impl.requires_grad) return nullptr;
    // One accumulator per leaf, so a leaf used twice receives both gradients.
    auto acc = impl.grad_accumulator.lock();
    if (!acc) {
        acc = std::make_shared<AccumulateGrad>(t.impl_ptr());
        impl.grad_accumulator = acc;
    }
    return acc;
}

bool should_record(const std::vector<Tensor>& inputs) {
    if (!GradMode::enabled()) return false;
    for (const auto& t : inputs)
        if (t.defined() && t.requires_grad()) return true;
    return false;
}

void record(Tensor& output, std::shared_ptr<Node> node, const std::vector<Tensor>& inputs) {
    node->next.clear();
    for (const auto& t : inputs) node->next.push_back(gradient_edge(t));
    output.impl().grad_fn = std::move(node);
}

Tensor save_for_backward(const Tensor& t) {
    memory::tag_memory_if(t, memory::MemoryCategory::Temporary, memory::MemoryCategory::SavedActivation);
    return t.detach();
}

}  // namespace gl
