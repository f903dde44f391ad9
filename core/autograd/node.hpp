/// @file
/// @brief The nodes of the backward graph that define-by-run autograd records.
///
/// Owns: what a recorded op remembers (saved tensors, edges to its inputs' nodes) and
/// how gradients reach leaves. Knows nothing about particular ops: each op in ops/
/// defines its own Node subclass next to its forward.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "tensor/tensor.hpp"

namespace gl {

/// One recorded op. Given the gradient of the loss with respect to the op's output, it
/// returns the gradient with respect to each of its inputs.
class Node {
public:
    virtual ~Node() = default;
    /// The op's name for messages and graph dumps ("MatmulBackward").
    virtual std::string name() const = 0;
    /// dL/d(input i) for every input, given dL/d(output). An entry may be undefined when
    /// that input needs no gradient. The result has one entry per input.
    virtual std::vector<Tensor> backward(const Tensor& grad_output) = 0;

    /// Where each input's gradient goes next: the node that made that input, the
    /// accumulator of a leaf, or null when the input needs no gradient.
    std::vector<std::shared_ptr<Node>> next;
};

/// The node at a leaf: adds each incoming gradient into the leaf's grad.
class AccumulateGrad final : public Node {
public:
    /// Accumulates into @p leaf (held weakly: the graph must not keep parameters alive).
    explicit AccumulateGrad(const std::shared_ptr<TensorImpl>& leaf) : leaf_(leaf) {}
    std::string name() const override { return "AccumulateGrad"; }
    /// Adds @p grad_output into the leaf's grad and returns no input gradients.
    std::vector<Tensor> backward(const Tensor& grad_output) override;

private:
    std::weak_ptr<TensorImpl> leaf_;
};

/// The node a gradient for @p t must be sent to: its grad_fn, its leaf accumulator
/// (created on first use), or null when @p t does not require grad.
std::shared_ptr<Node> gradient_edge(const Tensor& t);

/// True when grad mode is on and any of @p inputs requires grad: the op must record.
bool should_record(const std::vector<Tensor>& inputs);

/// Makes @p node the grad_fn of @p output, with one edge per entry of @p inputs.
void record(Tensor& output, std::shared_ptr<Node> node, const std::vector<Tensor>& inputs);

/// What a node keeps of @p t for its backward: a detached handle to the same bytes.
/// When memory is tracked, bytes that were temporaries are counted as saved activations
/// from now until they are freed (a saved weight stays a parameter).
Tensor save_for_backward(const Tensor& t);

}  // namespace gl
