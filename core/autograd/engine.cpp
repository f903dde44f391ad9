#include "autograd/engine.hpp"

#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "autograd/accumulate.hpp"
#include "autograd/grad_mode.hpp"
#include "profiler/profiler.hpp"

namespace gl {

std::vector<Node*> topological_order(Node* root) {
    // LAB 01 BEGIN: topological order of the backward graph
    // Visit the graph depth-first from root. A node is appended after all the nodes it
    // points to (its inputs' nodes) have been appended (post-order); reversing that list
    // puts every node before its inputs. Use an explicit stack: deep networks would
    // overflow the call stack with recursion.
    std::vector<Node*> post_order;
    if (!root) return post_order;
    std::unordered_set<Node*> visited{root};
    std::vector<std::pair<Node*, std::size_t>> stack{{root, 0}};  // node, next edge to try
    while (!stack.empty()) {
        auto& [node, next_edge] = stack.back();
        if (next_edge < node->next.size()) {
            Node* child = node->next[next_edge++].get();
            if (child && visited.insert(child).second) stack.push_back({child, 0});
        } else {
            post_order.push_back(node);
            stack.pop_back();
        }
    }
    return {post_order.rbegin(), post_order.rend()};
    // LAB 01 END
}

void run_backward(const Tensor& root, const Tensor& gradient) {
    const prof::Scope scope(prof::Category::OpBackward, "autograd::backward");
    check(root.requires_grad(),
          "backward(): this tensor does not require grad; mark an input or parameter with "
          "set_requires_grad() before computing it");
    Tensor seed = gradient;
    if (!seed.defined()) {
        check(root.numel() == 1, "backward(): the tensor has shape " + shape_str(root.shape()) +
                                     "; only a scalar gets an implicit gradient of 1, so pass "
                                     "a gradient of the same shape");
        seed = ones(root.shape(), root.dtype(), root.device());
    }
    check(seed.shape() == root.shape(), "backward(): gradient shape " + shape_str(seed.shape()) +
                                            " differs from the tensor's " + shape_str(root.shape()));
    NoGradGuard no_grad;
    std::shared_ptr<Node> root_node = gradient_edge(root);

    // LAB 01 BEGIN: the reverse-topological backward walk
    // Each node runs once, after every node that feeds it a gradient has run. Gradients
    // that reach the same node along several paths are summed (add_gradients, from
    // autograd/accumulate.hpp) before it runs.
    std::unordered_map<Node*, Tensor> pending{{root_node.get(), seed}};
    for (Node* node : topological_order(root_node.get())) {
        auto it = pending.find(node);
        if (it == pending.end()) continue;  // no gradient flows through this node
        const Tensor grad_output = std::move(it->second);
        pending.erase(it);
        prof::Scope scope(prof::Category::OpBackward, "backward");
        if (scope.on()) scope.set_name(node->name());  // a string built only when profiling
        const std::vector<Tensor> input_grads = node->backward(grad_output);
        for (std::size_t i = 0; i < input_grads.size() && i < node->next.size(); ++i) {
            Node* target = node->next[i].get();
            if (!target || !input_grads[i].defined()) continue;
            auto [slot, inserted] = pending.try_emplace(target, input_grads[i]);
            if (!inserted) slot->second = add_gradients(slot->second, input_grads[i]);
        }
    }
    // LAB 01 END
}

// Tensor's entry point into the graph: declared with the tensor, defined here so that the
// tensor layer stays below autograd.
void Tensor::backward(const Tensor& gradient) const { run_backward(*this, gradient); }

}  // namespace gl
