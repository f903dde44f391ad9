/// @file
/// @brief Backpropagation: walking the recorded graph from the loss back to the leaves.
#pragma once

#include <vector>

#include "autograd/node.hpp"

namespace gl {

/// The nodes reachable from @p root, ordered so that every node comes before the nodes
/// of its inputs (reverse topological order of the forward computation).
std::vector<Node*> topological_order(Node* root);

/// Backpropagates @p gradient (dL/d root; ones for a scalar root when undefined) through
/// the graph that produced @p root, accumulating into the grad of every leaf that
/// requires it. Runs with grad mode off: no graph is recorded for the backward itself.
void run_backward(const Tensor& root, const Tensor& gradient);

}  // namespace gl
