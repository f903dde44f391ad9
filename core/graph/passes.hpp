/// @file
/// @brief Whole-graph passes: each takes a verified graph and returns a smaller or
/// faster one that computes the same outputs and updates.
///
/// Owns: dead-code elimination, constant folding, folding transposes into matmuls, and
/// element-wise fusion (Lab 13). Memory planning is in memory_plan.hpp. Knows nothing
/// about tracing or running.
#pragma once

#include "graph/ir.hpp"

namespace gl::graph {

/// Removes nodes none of whose outputs reach a graph output or an update (a parameter
/// or state written in place). Returns how many nodes it removed.
int eliminate_dead_code(Graph& g);

/// Computes element-wise nodes whose inputs are all Constants once, now: their outputs
/// become Constants and the nodes go. Returns how many nodes it folded.
int fold_constants(Graph& g);

/// Lets matmul read a transposed operand directly (a flag, as BLAS does) instead of
/// through a transpose node, and turns the transpose of a matmul into the matmul of the
/// swapped operands ((AB)^T = B^T A^T); the nodes left unused go with dead-code
/// elimination. Returns how many operands and transposes it changed.
int fold_transposes(Graph& g);

/// Merges chains of element-wise nodes with the same loop shape into fused_elementwise
/// nodes (one loop, one memory pass), so values used only inside a chain never reach
/// memory. A fused node takes the place of its last member. Returns the number of
/// kernels (nodes) the graph has afterwards.
int fuse_elementwise(Graph& g);

/// The pipeline the captured step uses: fold_transposes, fold_constants, DCE, then
/// (with @p fuse) fuse_elementwise; verify() after each pass.
void optimize(Graph& g, bool fuse);

}  // namespace gl::graph
