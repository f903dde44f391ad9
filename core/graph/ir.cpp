// The IR's op table (shapes), printer and verifier.
//
// Ops, with what they compute:
//   add sub mul div (a, b)   element-wise; b (or a) may be a suffix of the other's shape
//   neg relu sqrt (a)        element-wise
//   relu_grad (g, y)         g where y > 0, else 0 (ReLU's backward from its output)
//   fused_elementwise (...)  a loop over Node::program (made by fuse_elementwise)
//   matmul (a, b)            op(a) op(b), op = transpose when Node::trans_a / trans_b
//   transpose (a)            2-d transpose (a copy; fold_transposes removes it before matmul)
//   reduce_to (a)            sums a down to Node::shape, a suffix of a's shape
//   mean (a)                 the mean of all elements, a scalar
//   log_softmax (x)          row-wise, x 2-d
//   cross_entropy (x, t)     mean loss (scalar) and log_softmax(x), t int32 class indices
//   cross_entropy_grad (lp, t, g)  (softmax - onehot(t)) * g / rows, from the log-probs lp
#include "graph/ir.hpp"

#include <set>

#include "base/error.hpp"

namespace gl::graph {
namespace {

bool is_suffix(const Shape& small, const Shape& big) {
    if (small.size() > big.size()) return false;
    const std::size_t lead = big.size() - small.size();
    for (std::size_t d = 0; d < small.size(); ++d)
        if (small[d] != big[lead + d]) return false;
    return true;
}

std::string value_ref(const Graph& g, int id) { return g.values[static_cast<std::size_t>(id)].name; }

std::string type_str(const Value& v) {
    std::string dims;
    for (std::size_t d = 0; d < v.shape.size(); ++d) {
        if (d) dims += ',';
        dims += std::to_string(v.shape[d]);
    }
    return (v.dtype == DType::Int32 ? "i32[" : "f32[") + dims + "]";
}

// The broadcast result of element-wise inputs: the longest shape, every other a suffix of it.
Shape elementwise_shape(const Graph& g, const std::vector<int>& inputs, const std::string& op) {
    Shape out;
    for (int id : inputs) {
        const Shape& s = g.values[static_cast<std::size_t>(id)].shape;
        if (s.size() > out.size()) out = s;
    }
    for (int id : inputs) {
        const Value& v = g.values[static_cast<std::size_t>(id)];
        check(is_suffix(v.shape, out), op + ": input " + v.name + " of shape " + shape_str(v.shape) +
                                           " does not broadcast to " + shape_str(out) +
                                           " (only trailing-dimension broadcasting is supported)");
        check(v.dtype == DType::Float32, op + ": input " + v.name + " is not float32");
    }
    return out;
}

const Value& input(const Graph& g, const Node& n, std::size_t i) {
    return g.values[static_cast<std::size_t>(n.inputs[i])];
}

}  // namespace

const char* name_of(ValueKind kind) {
    switch (kind) {
        case ValueKind::Input: return "input";
        case ValueKind::Parameter: return "param";
        case ValueKind::State: return "state";
        case ValueKind::Constant: return "const";
        case ValueKind::Temporary: return "temp";
    }
    return "?";
}

bool is_elementwise(const std::string& op) { return arity(op) > 0; }

int arity(const std::string& op) {
    static const std::set<std::string> binary{"add", "sub", "mul", "div", "relu_grad"};
    static const std::set<std::string> unary{"neg", "relu", "sqrt"};
    if (binary.count(op)) return 2;
    if (unary.count(op)) return 1;
    return 0;
}

std::vector<std::pair<Shape, DType>> infer_shapes(const Graph& g, const Node& n) {
    const auto expect_inputs = [&](std::size_t count) {
        check(n.inputs.size() == count, n.op + ": takes " + std::to_string(count) + " inputs, got " +
                                            std::to_string(n.inputs.size()));
    };
    const DType f32 = DType::Float32;
    if (is_elementwise(n.op)) {
        expect_inputs(static_cast<std::size_t>(arity(n.op)));
        return {{elementwise_shape(g, n.inputs, n.op), f32}};
    }
    if (n.op == "fused_elementwise") {
        check(!n.program.empty() && !n.outputs.empty() && n.output_registers.size() == n.outputs.size(),
              "fused_elementwise: needs a program, an output, and one register per output");
        // Step k may read the inputs' registers and those of the steps before it.
        const auto n_inputs = static_cast<int>(n.inputs.size());
        for (std::size_t k = 0; k < n.program.size(); ++k) {
            const FusedStep& s = n.program[k];
            check(is_elementwise(s.op) && static_cast<int>(s.args.size()) == arity(s.op),
                  "fused_elementwise: step " + std::to_string(k) + " (" + s.op + ") is not an element-wise op with " +
                      "its number of arguments");
            for (int r : s.args)
                check(r >= 0 && r < n_inputs + static_cast<int>(k),
                      "fused_elementwise: step " + std::to_string(k) + " reads register " + std::to_string(r) +
                          ", which is not defined before it");
        }
        for (int r : n.output_registers)
            check(r >= 0 && r < n_inputs + static_cast<int>(n.program.size()),
                  "fused_elementwise: an output takes register " + std::to_string(r) + ", which does not exist");
        for (int id : n.inputs)
            check(is_suffix(g.values[static_cast<std::size_t>(id)].shape, n.shape),
                  "fused_elementwise: input " + value_ref(g, id) + " does not broadcast to " + shape_str(n.shape));
        return std::vector<std::pair<Shape, DType>>(n.outputs.size(), {n.shape, f32});
    }
    if (n.op == "matmul") {
        expect_inputs(2);
        const Shape& a = input(g, n, 0).shape;
        const Shape& b = input(g, n, 1).shape;
        check(a.size() == 2 && b.size() == 2, "matmul: operands must be 2-d");
        const std::int64_t m = n.trans_a ? a[1] : a[0], ka = n.trans_a ? a[0] : a[1];
        const std::int64_t kb = n.trans_b ? b[1] : b[0], cols = n.trans_b ? b[0] : b[1];
        check(ka == kb, "matmul: inner dimensions differ: " + shape_str(a) + " x " + shape_str(b));
        return {{{m, cols}, f32}};
    }
    if (n.op == "transpose") {
        expect_inputs(1);
        const Shape& a = input(g, n, 0).shape;
        check(a.size() == 2, "transpose: needs a 2-d input");
        return {{{a[1], a[0]}, f32}};
    }
    if (n.op == "reduce_to") {
        expect_inputs(1);
        check(is_suffix(n.shape, input(g, n, 0).shape),
              "reduce_to: " + shape_str(n.shape) + " is not a suffix of " + shape_str(input(g, n, 0).shape));
        return {{n.shape, f32}};
    }
    if (n.op == "mean") {
        expect_inputs(1);
        return {{{}, f32}};
    }
    if (n.op == "log_softmax") {
        expect_inputs(1);
        check(input(g, n, 0).shape.size() == 2, "log_softmax: needs a 2-d input");
        return {{input(g, n, 0).shape, f32}};
    }
    if (n.op == "cross_entropy" || n.op == "cross_entropy_grad") {
        const bool grad = n.op == "cross_entropy_grad";
        expect_inputs(grad ? 3 : 2);
        const Value& x = input(g, n, 0);
        const Value& t = input(g, n, 1);
        check(x.shape.size() == 2 && t.dtype == DType::Int32 && t.shape == Shape{x.shape[0]},
              n.op + ": needs [B, C] float32 scores and [B] int32 targets");
        if (grad) return {{x.shape, f32}};
        return {{{}, f32}, {x.shape, f32}};
    }
    throw Error("graph: unknown op '" + n.op + "': the IR holds matmul, transpose, mean, reduce_to, log_softmax, "
                "cross_entropy and the element-wise ops; a model that calls others (a convolution, pooling) "
                "cannot be captured: run this model eagerly");
}

int Graph::add_value(Value v) {
    values.push_back(std::move(v));
    const int id = static_cast<int>(values.size()) - 1;
    if (values.back().name.empty()) values.back().name = "%" + std::to_string(id);
    return id;
}

int Graph::add_node(const std::string& op, const std::vector<int>& inputs, bool trans_a, bool trans_b) {
    Node n;
    n.op = op;
    n.inputs = inputs;
    n.trans_a = trans_a;
    n.trans_b = trans_b;
    for (const auto& [shape, dtype] : infer_shapes(*this, n)) {
        Value v;
        v.shape = shape;
        v.dtype = dtype;
        n.outputs.push_back(add_value(v));
    }
    nodes.push_back(std::move(n));
    return nodes.back().outputs.front();
}

int Graph::find(const std::string& name) const {
    for (std::size_t i = 0; i < values.size(); ++i)
        if (values[i].name == name) return static_cast<int>(i);
    throw Error("graph: no value called '" + name + "'");
}

std::int64_t Graph::bytes_of(int id) const {
    const Value& v = values[static_cast<std::size_t>(id)];
    return numel_of(v.shape) * static_cast<std::int64_t>(size_of(v.dtype));
}

std::string to_text(const Graph& g) {
    std::string s;
    for (const Value& v : g.values)
        if (v.kind != ValueKind::Temporary)
            s += std::string(name_of(v.kind)) + " " + v.name + ":" + type_str(v) + "\n";
    for (const Node& n : g.nodes) {
        std::string line;
        for (std::size_t i = 0; i < n.outputs.size(); ++i) {
            const Value& out = g.values[static_cast<std::size_t>(n.outputs[i])];
            line += (i ? ", " : "") + out.name + ":" + type_str(out);
            if (out.updates >= 0) line += " (-> " + value_ref(g, out.updates) + ")";
        }
        line += " = " + n.op;
        if (n.trans_a || n.trans_b) line += std::string("[") + (n.trans_a ? "T" : "N") + (n.trans_b ? "T" : "N") + "]";
        line += "(";
        for (std::size_t i = 0; i < n.inputs.size(); ++i) line += (i ? ", " : "") + value_ref(g, n.inputs[i]);
        line += ")";
        if (!n.program.empty()) {
            line += " {";
            for (std::size_t i = 0; i < n.program.size(); ++i) {
                line += (i ? "; " : " ") + n.program[i].op + "(";
                for (std::size_t a = 0; a < n.program[i].args.size(); ++a) {
                    line += a ? ",r" : "r";
                    line += std::to_string(n.program[i].args[a]);
                }
                line += ")";
            }
            line += " }";
        }
        s += line + "\n";
    }
    s += "return";
    for (std::size_t i = 0; i < g.outputs.size(); ++i) s += (i ? ", " : " ") + value_ref(g, g.outputs[i]);
    s += "\n";
    for (const std::string& note : g.notes) s += "note: " + note + "\n";
    return s;
}

void verify(const Graph& g) {
    const auto n_values = static_cast<int>(g.values.size());
    const auto in_range = [&](int id, const std::string& where) {
        check(id >= 0 && id < n_values, "graph: " + where + " refers to value " + std::to_string(id) +
                                            ", which does not exist");
    };
    // A value is available from the start when it comes from outside, else once its node ran.
    std::vector<bool> defined(g.values.size());
    for (std::size_t i = 0; i < g.values.size(); ++i) defined[i] = g.values[i].kind != ValueKind::Temporary;
    std::vector<int> last_read(g.values.size(), -1);
    for (std::size_t i = 0; i < g.nodes.size(); ++i) {
        const Node& n = g.nodes[i];
        const std::string where = "node " + std::to_string(i) + " (" + n.op + ")";
        for (int id : n.inputs) {
            in_range(id, where);
            check(defined[static_cast<std::size_t>(id)],
                  "graph: " + where + " reads " + value_ref(g, id) + " before any node defines it");
            last_read[static_cast<std::size_t>(id)] = static_cast<int>(i);
        }
        const auto shapes = infer_shapes(g, n);
        check(shapes.size() == n.outputs.size(), "graph: " + where + " has the wrong number of outputs");
        for (std::size_t o = 0; o < n.outputs.size(); ++o) {
            const int id = n.outputs[o];
            in_range(id, where);
            const Value& v = g.values[static_cast<std::size_t>(id)];
            check(v.kind == ValueKind::Temporary && !defined[static_cast<std::size_t>(id)],
                  "graph: " + where + " defines " + v.name + ", which is already defined");
            check(v.shape == shapes[o].first && v.dtype == shapes[o].second,
                  "graph: " + where + " output " + v.name + " has shape " + shape_str(v.shape) + ", the op gives " +
                      shape_str(shapes[o].first));
            defined[static_cast<std::size_t>(id)] = true;
        }
    }
    for (int id : g.outputs) {
        in_range(id, "the return list");
        check(defined[static_cast<std::size_t>(id)], "graph: returns " + value_ref(g, id) + ", never defined");
    }
    // An update overwrites its target in place: nothing may read the old value afterwards.
    for (std::size_t i = 0; i < g.nodes.size(); ++i)
        for (int id : g.nodes[i].outputs) {
            const int target = g.values[static_cast<std::size_t>(id)].updates;
            if (target < 0) continue;
            in_range(target, "update of " + value_ref(g, id));
            const ValueKind k = g.values[static_cast<std::size_t>(target)].kind;
            check(k == ValueKind::Parameter || k == ValueKind::State,
                  "graph: " + value_ref(g, id) + " updates " + value_ref(g, target) + ", which is not a parameter or state");
            check(g.values[static_cast<std::size_t>(target)].shape == g.values[static_cast<std::size_t>(id)].shape,
                  "graph: " + value_ref(g, id) + " updates " + value_ref(g, target) + " with another shape");
            check(last_read[static_cast<std::size_t>(target)] <= static_cast<int>(i),
                  "graph: " + value_ref(g, target) + " is read after node " + std::to_string(i) + " overwrote it");
        }
}

}  // namespace gl::graph
