#include "graph/autodiff.hpp"

#include <map>

#include "base/error.hpp"

namespace gl::graph {
namespace {

const Shape& shape_of(const Graph& g, int id) { return g.values[static_cast<std::size_t>(id)].shape; }

// The gradient of a broadcast input: the output's gradient summed down to its shape.
int unbroadcast(Graph& g, int grad, int input) {
    if (shape_of(g, grad) == shape_of(g, input)) return grad;
    Node n;
    n.op = "reduce_to";
    n.inputs = {grad};
    n.shape = shape_of(g, input);
    Value v;
    v.shape = n.shape;
    n.outputs = {g.add_value(v)};
    g.nodes.push_back(n);
    return n.outputs[0];
}

// d(matmul)/d(inputs): C = op(A) op(B) gives dop(A) = G op(B)^T and dop(B) = op(A)^T G,
// written as one matmul each with the transposes folded into the flags.
std::pair<int, int> matmul_grads(Graph& g, const Node& n, int grad) {
    const int a = n.inputs[0], b = n.inputs[1];
    const int da = n.trans_a ? g.add_node("matmul", {b, grad}, n.trans_b, true)
                             : g.add_node("matmul", {grad, b}, false, !n.trans_b);
    const int db = n.trans_b ? g.add_node("matmul", {grad, a}, true, n.trans_a)
                             : g.add_node("matmul", {a, grad}, !n.trans_a, false);
    return {da, db};
}

// Gradients of node @p n's inputs given its first output's gradient @p grad (-1 = none).
std::vector<int> input_grads(Graph& g, const Node& n, int grad) {
    const auto in = [&](std::size_t i) { return n.inputs[i]; };
    if (n.op == "add") return {unbroadcast(g, grad, in(0)), unbroadcast(g, grad, in(1))};
    if (n.op == "sub") return {unbroadcast(g, grad, in(0)), unbroadcast(g, g.add_node("neg", {grad}), in(1))};
    if (n.op == "mul")
        return {unbroadcast(g, g.add_node("mul", {grad, in(1)}), in(0)),
                unbroadcast(g, g.add_node("mul", {grad, in(0)}), in(1))};
    if (n.op == "neg") return {g.add_node("neg", {grad})};
    if (n.op == "relu") return {g.add_node("relu_grad", {grad, n.outputs[0]})};
    if (n.op == "transpose") return {g.add_node("transpose", {grad})};
    if (n.op == "matmul") {
        const auto [da, db] = matmul_grads(g, n, grad);
        return {da, db};
    }
    if (n.op == "cross_entropy")  // the log-probabilities are the node's second output
        return {g.add_node("cross_entropy_grad", {n.outputs[1], in(1), grad}), -1};
    throw Error("graph: no gradient rule for op '" + n.op + "'; the backward cannot be captured through it");
}

}  // namespace

int add_constant(Graph& g, double value, const Shape& shape, const std::string& name) {
    Value v;
    v.name = name;
    v.shape = shape;
    v.kind = ValueKind::Constant;
    v.data = full(shape, value, DType::Float32);
    return g.add_value(v);
}

std::vector<int> append_backward(Graph& g, int loss, const std::vector<int>& wrt) {
    check(shape_of(g, loss).empty(), "append_backward: the loss must be a scalar, got " + shape_str(shape_of(g, loss)));
    std::map<int, int> grad_of{{loss, add_constant(g, 1.0, {}, "dloss")}};
    // Walk the forward nodes last to first: a node's output gradient is complete once
    // every later node that reads the output has passed its share back.
    const std::size_t forward_nodes = g.nodes.size();
    for (std::size_t i = forward_nodes; i-- > 0;) {
        const Node n = g.nodes[i];  // a copy: adding nodes may move the vector
        const auto found = grad_of.find(n.outputs[0]);
        if (found == grad_of.end()) continue;  // the loss does not depend on this node
        const std::vector<int> grads = input_grads(g, n, found->second);
        for (std::size_t k = 0; k < grads.size(); ++k) {
            if (grads[k] < 0) continue;
            const int input = n.inputs[k];
            const auto [slot, inserted] = grad_of.try_emplace(input, grads[k]);
            if (!inserted) slot->second = g.add_node("add", {slot->second, grads[k]});  // used twice: sum
        }
    }
    std::vector<int> result;
    for (int id : wrt) {
        const auto found = grad_of.find(id);
        result.push_back(found != grad_of.end() ? found->second : add_constant(g, 0.0, shape_of(g, id)));
    }
    return result;
}

}  // namespace gl::graph
