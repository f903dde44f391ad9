#include "autograd/node.hpp"

#include "autograd/accumulate.hpp"
#include "autograd/grad_mode.hpp"
#include "memory/tracking_allocator.hpp"

namespace gl {
namespace {

// True when @p t is the only holder of its bytes (one reference to the tensor, one to
// its storage) and lies contiguously from the storage's first element.
bool can_take_over(const Tensor& t) {
    return t.defined() && t.impl_ptr().use_count() == 1 && t.storage() && t.storage().use_count() == 1 &&
           t.is_contiguous() && t.storage_offset() == 0;
}

}  // namespace

std::vector<Tensor> AccumulateGrad::backward(const Tensor& grad_output) {
    auto leaf = leaf_.lock();
    if (!leaf) return {};  // the parameter is gone; nothing to accumulate into
    Tensor leaf_tensor(leaf);
    check(grad_output.shape() == leaf->shape,
          "autograd: gradient of shape " + shape_str(grad_output.shape()) +
              " for a leaf of shape " + shape_str(leaf->shape) +
              "; a backward function returned the wrong shape");
    if (!leaf->grad) {
        // Own the gradient. When nothing else holds the incoming tensor or its bytes (the
        // engine hands over the only reference), take its bytes as they are: copying
        // them would be a pure cost, a whole weight's size per parameter per step. Else
        // copy, since another node may still read or add to the shared tensor.
        if (can_take_over(grad_output)) {
            Tensor taken = make_view(grad_output, grad_output.shape(), grad_output.strides(), 0);
            memory::tag_memory(taken, memory::MemoryCategory::Gradient);
            leaf->grad = taken.impl_ptr();
        } else {
            memory::MemoryCategoryScope gradient_bytes(memory::MemoryCategory::Gradient);
            leaf->grad = grad_output.clone().impl_ptr();
        }
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
