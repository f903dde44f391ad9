/// @file
/// @brief The backward pass added to a captured graph, from each op's gradient rule.
///
/// Owns: the gradient rules of the IR's ops, written as more IR (what AOTAutograd does
/// with a traced forward). The rules are the same math as the backward nodes in ops/;
/// the order is reverse topological, as autograd/engine.cpp walks. Knows nothing about
/// how the graph is run.
#pragma once

#include <vector>

#include "graph/ir.hpp"

namespace gl::graph {

/// Appends to @p g the nodes that compute d(@p loss)/d(each of @p wrt) and returns the
/// gradients' value ids (in the order of @p wrt). @p loss must be a scalar. A value of
/// @p wrt the loss does not depend on gets a gradient of zeros. Throws gl::Error naming
/// an op on the path that has no gradient rule.
std::vector<int> append_backward(Graph& g, int loss, const std::vector<int>& wrt);

/// Adds a float32 Constant of shape @p shape filled with @p value; returns its id.
int add_constant(Graph& g, double value, const Shape& shape = {}, const std::string& name = "");

}  // namespace gl::graph
