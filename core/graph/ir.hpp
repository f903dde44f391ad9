/// @file
/// @brief A small static-graph IR: values with shapes and dtypes, nodes with ops.
///
/// Owns: the graph data structure, what each op computes in shape terms (infer_shapes),
/// the text printer and the verifier. A graph is a straight list of nodes in an order
/// that runs (each value is defined before it is used); there is no control flow, which
/// is what makes whole-graph passes possible (claim JIT-1). Knows nothing about how a
/// graph was made (capture.hpp) or run (executor.hpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tensor/tensor.hpp"

namespace gl::graph {

/// Where a value's bytes come from.
enum class ValueKind {
    Input,      ///< bound by the caller before each run (a batch, a step-size scalar)
    Parameter,  ///< a model weight, bound once; a training step may update it in place
    State,      ///< optimizer state (Adam's moments), bound once, updated in place
    Constant,   ///< numbers stored in the graph (Value::data)
    Temporary,  ///< computed by a node; its buffer is planned (memory_plan.hpp)
};

/// "input", "param", "state", "const" or "temp".
const char* name_of(ValueKind kind);

/// One tensor of the graph (SSA: defined once, by a node or from outside).
struct Value {
    std::string name;       ///< for the printer and for binding ("x", "0.weight", "%12")
    Shape shape;            ///< its shape (fixed: the graph is static)
    DType dtype = DType::Float32;  ///< its element type
    ValueKind kind = ValueKind::Temporary;  ///< where its bytes come from
    Tensor data;            ///< the numbers of a Constant; the bound tensor of a Parameter/State
    /// For a Temporary that is the new content of a Parameter or State value (an update
    /// in a training step): that value's id, else -1. The executor writes it in place.
    int updates = -1;
};

/// One step of a fused element-wise loop: dst = op(args), over registers. Registers
/// 0 .. n_inputs-1 are the fused node's inputs; each step defines the next register.
struct FusedStep {
    std::string op;         ///< an element-wise op name (is_elementwise)
    std::vector<int> args;  ///< registers read
};

/// One op applied to values, producing values.
struct Node {
    std::string op;               ///< op name (see the table in ir.cpp)
    std::vector<int> inputs;      ///< value ids read
    std::vector<int> outputs;     ///< value ids defined
    bool trans_a = false;         ///< matmul: read the first operand transposed
    bool trans_b = false;         ///< matmul: read the second operand transposed
    /// reduce_to: the shape to sum down to; fused_elementwise: the loop's shape.
    Shape shape;
    /// fused_elementwise: the loop body, one step per original op.
    std::vector<FusedStep> program;
    /// fused_elementwise: for each output, the register it takes.
    std::vector<int> output_registers;
};

/// A static graph: values, nodes in a runnable order, and the values it hands back.
struct Graph {
    std::vector<Value> values;  ///< indexed by value id
    std::vector<Node> nodes;    ///< in execution order
    std::vector<int> outputs;   ///< value ids returned by a run
    /// What capture noticed and the reader must know (for example that the trace fixed
    /// one path through data-dependent control flow).
    std::vector<std::string> notes;

    /// Adds a value; returns its id.
    int add_value(Value v);
    /// Adds a node of @p op over @p inputs whose outputs are new Temporaries with shapes
    /// from infer_shapes(); returns the first output's id.
    int add_node(const std::string& op, const std::vector<int>& inputs, bool trans_a = false,
                 bool trans_b = false);
    /// The id of the value called @p name; throws gl::Error when there is none.
    int find(const std::string& name) const;
    /// The byte size of value @p id.
    std::int64_t bytes_of(int id) const;
};

/// True for ops computed one element at a time (add, sub, mul, div, neg, relu, sqrt,
/// relu_grad), whose inputs are the output's shape or a suffix of it (broadcast).
bool is_elementwise(const std::string& op);
/// How many inputs element-wise @p op takes (1 or 2).
int arity(const std::string& op);

/// The shapes and dtypes of @p node's outputs, from its inputs' (ids into @p g). Throws
/// gl::Error naming the op when the inputs do not fit it (or the op is unknown).
std::vector<std::pair<Shape, DType>> infer_shapes(const Graph& g, const Node& node);

/// The graph as text, one node per line ("%7:f32[32,128] = relu(%6)").
std::string to_text(const Graph& g);

/// Checks that @p g is well formed: ids in range, every value defined once before use,
/// shapes as infer_shapes says, updates that target a Parameter/State value not read
/// after the update. Throws gl::Error with the first problem found.
void verify(const Graph& g);

}  // namespace gl::graph
