// Gradient checkpointing (see checkpoint.hpp for the idea).
//
// Forward:  out = fn(inputs) with grad mode off  -> no node inside fn saves anything;
//           record one CheckpointBackward node that keeps fn and the inputs.
// Backward: detach the inputs into fresh leaves, run fn again with grad mode on (a
//           small graph of its own), backpropagate the incoming gradient through it,
//           and hand the leaves' gradients on to the inputs' nodes. Parameters used
//           inside fn receive their gradients from that inner backward directly.
#include "autograd/checkpoint.hpp"

#include "autograd/engine.hpp"
#include "autograd/grad_mode.hpp"
#include "autograd/node.hpp"
#include "memory/tracking_allocator.hpp"

namespace gl {
namespace {

thread_local std::size_t t_recomputes = 0;

/// Turns gradient recording on for its lifetime (backward runs with it off).
class EnableGradGuard {
public:
    EnableGradGuard() : previous_(GradMode::enabled()) { GradMode::set_enabled(true); }
    ~EnableGradGuard() { GradMode::set_enabled(previous_); }
    EnableGradGuard(const EnableGradGuard&) = delete;
    EnableGradGuard& operator=(const EnableGradGuard&) = delete;

private:
    bool previous_;
};

struct CheckpointBackward final : Node {
    CheckpointFn fn;
    std::vector<Tensor> inputs;  // the only activations this node keeps
    std::string name() const override { return "CheckpointBackward"; }
    std::vector<Tensor> backward(const Tensor& grad_output) override {
        // LAB 07 BEGIN: recompute the function and backpropagate through it
        // 1. Make a fresh leaf for each saved input (detach; mark it requires_grad when
        //    the input's gradient is wanted, i.e. its edge next[i] is not null).
        // 2. With gradient recording on (EnableGradGuard: backward runs with it off), call
        //    fn on the leaves again; count the recompute (++t_recomputes).
        // 3. If the result requires grad, backpropagate grad_output through it
        //    (run_backward). Parameters used inside fn accumulate their gradients there.
        // 4. Return each leaf's gradient (undefined where there is none), one per input.
        //    Relabel each as a Temporary (memory::tag_memory): it flows on, it is not a
        //    parameter's accumulated gradient.
        std::vector<Tensor> leaves;
        for (std::size_t i = 0; i < inputs.size(); ++i) {
            Tensor leaf = inputs[i].detach();
            if (next[i]) leaf.set_requires_grad(true);
            leaves.push_back(leaf);
        }
        Tensor out;
        {
            EnableGradGuard recording;
            out = fn(leaves);
            ++t_recomputes;
        }
        if (out.requires_grad()) run_backward(out, grad_output);
        std::vector<Tensor> grads;
        for (const Tensor& leaf : leaves) {
            const Tensor g = leaf.grad();
            memory::tag_memory(g, memory::MemoryCategory::Temporary);
            grads.push_back(g);
        }
        return grads;
        // LAB 07 END
    }
};

}  // namespace

Tensor checkpoint(const CheckpointFn& fn, const std::vector<Tensor>& inputs) {
    // LAB 07 BEGIN: run the function without saving its activations
    // Without grad mode there is nothing to save: just return fn(inputs). Otherwise call
    // fn with recording off (NoGradGuard), so no op inside fn keeps a tensor, then record
    // one CheckpointBackward node (record(out, node, inputs)) that keeps fn and the
    // inputs (save_for_backward each one). Record on a detached handle of the result:
    // fn may return one of its inputs unchanged.
    if (!GradMode::enabled()) return fn(inputs);
    Tensor out;
    {
        NoGradGuard not_recording;
        out = fn(inputs).detach();
    }
    auto node = std::make_shared<CheckpointBackward>();
    node->fn = fn;
    for (const Tensor& x : inputs) node->inputs.push_back(save_for_backward(x));
    record(out, node, inputs);
    return out;
    // LAB 07 END
}

Tensor checkpoint(const CheckpointFn1& fn, const Tensor& input) {
    return checkpoint(CheckpointFn([fn](const std::vector<Tensor>& xs) { return fn(xs[0]); }), {input});
}

std::size_t checkpoint_recompute_count() { return t_recomputes; }

}  // namespace gl
