// ONNX export and import: a mapping between the IR's ops and ONNX's, over the protobuf
// classes that protoc made from ONNX's own schema (onnx/onnx-ml.proto, Debian's
// libonnx-dev). The protobuf library does the wire format, including rejecting bytes
// that are not a well-formed message; this file checks what the schema cannot say
// (supported ops, dtypes, shapes, sizes) before anything is allocated for a tensor.
#include "graph/onnx.hpp"

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "base/error.hpp"

namespace gl::graph {
namespace {

// ---------------------------------------------------------------------------------------
// Export

// The ONNX operator of each exportable IR op (element-wise ones map one to one).
const std::map<std::string, std::string>& onnx_op_of() {
    static const std::map<std::string, std::string> table{
        {"add", "Add"},   {"sub", "Sub"},   {"mul", "Mul"},        {"div", "Div"},
        {"neg", "Neg"},   {"relu", "Relu"}, {"sqrt", "Sqrt"},      {"transpose", "Transpose"},
        {"matmul", "Gemm"}, {"log_softmax", "LogSoftmax"},
    };
    return table;
}

void set_type(onnx::ValueInfoProto& info, const Value& v) {
    info.set_name(v.name);
    auto* tensor_type = info.mutable_type()->mutable_tensor_type();
    tensor_type->set_elem_type(onnx::TensorProto::FLOAT);
    auto* shape = tensor_type->mutable_shape();
    for (std::int64_t d : v.shape) shape->add_dim()->set_dim_value(d);
}

void add_initializer(onnx::GraphProto& graph, const Value& v) {
    check(v.dtype == DType::Float32 && v.data.defined(),
          "ONNX export: " + v.name + " is not a bound float32 tensor; only float32 weights are exported");
    onnx::TensorProto* t = graph.add_initializer();
    t->set_name(v.name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    for (std::int64_t d : v.shape) t->add_dims(d);
    // raw_data is little-endian float32, the layout of our (x86/ARM) memory.
    const std::vector<float> numbers = v.data.to_vector<float>();
    t->set_raw_data(numbers.data(), numbers.size() * sizeof(float));
}

onnx::NodeProto& add_onnx_node(onnx::GraphProto& graph, const std::string& op, const std::vector<std::string>& inputs,
                               const std::vector<std::string>& outputs) {
    onnx::NodeProto* n = graph.add_node();
    n->set_op_type(op);
    n->set_name(op + "_" + std::to_string(graph.node_size() - 1));
    for (const std::string& s : inputs) n->add_input(s);
    for (const std::string& s : outputs) n->add_output(s);
    return *n;
}

void add_int_attribute(onnx::NodeProto& n, const std::string& name, std::int64_t value) {
    onnx::AttributeProto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(value);
}

std::vector<std::string> names_of(const Graph& g, const std::vector<int>& ids) {
    std::vector<std::string> out;
    for (int id : ids) out.push_back(g.values[static_cast<std::size_t>(id)].name);
    return out;
}

// A fused loop goes back to one ONNX node per step: register r is an input's name for
// r < inputs, else the name of step r - inputs's result.
void export_fused(const Graph& g, const Node& n, onnx::GraphProto& graph) {
    std::vector<std::string> reg = names_of(g, n.inputs);
    const std::vector<std::string> outs = names_of(g, n.outputs);
    for (std::size_t k = 0; k < n.program.size(); ++k) {
        const FusedStep& s = n.program[k];
        const auto reg_id = static_cast<int>(reg.size());
        // A step whose register is an output takes that output's name.
        std::string name = outs.front() + ".step" + std::to_string(k);
        for (std::size_t o = 0; o < n.output_registers.size(); ++o)
            if (n.output_registers[o] == reg_id) name = outs[o];
        std::vector<std::string> args;
        for (int r : s.args) args.push_back(reg[static_cast<std::size_t>(r)]);
        add_onnx_node(graph, onnx_op_of().at(s.op), args, {name});
        reg.push_back(name);
    }
}

// Every node has an ONNX mapping; else the first op without one is named.
void check_exportable(const Graph& g) {
    for (const Node& n : g.nodes)
        check(n.op == "fused_elementwise" || onnx_op_of().count(n.op),
              "ONNX export: the op '" + n.op + "' has no ONNX mapping here (export an inference graph from "
              "capture_forward; training ops such as the loss and the optimizer update are not exported)");
}

void export_node(const Graph& g, const Node& n, onnx::GraphProto& graph) {
    if (n.op == "fused_elementwise") return export_fused(g, n, graph);
    onnx::NodeProto& node = add_onnx_node(graph, onnx_op_of().at(n.op), names_of(g, n.inputs), names_of(g, n.outputs));
    if (n.op == "matmul") {
        if (n.trans_a) add_int_attribute(node, "transA", 1);
        if (n.trans_b) add_int_attribute(node, "transB", 1);
    }
    if (n.op == "log_softmax") add_int_attribute(node, "axis", -1);
}

// ---------------------------------------------------------------------------------------
// Import

// The IR op of each element-wise ONNX operator.
const std::map<std::string, std::string>& ir_op_of() {
    static const std::map<std::string, std::string> table{
        {"Add", "add"}, {"Sub", "sub"}, {"Mul", "mul"}, {"Div", "div"},
        {"Neg", "neg"}, {"Relu", "relu"}, {"Sqrt", "sqrt"},
    };
    return table;
}

const std::set<std::string>& supported_ops() {
    static const std::set<std::string> ops{"Add",  "Sub",  "Mul",       "Div",    "Neg",       "Relu",
                                           "Sqrt", "Gemm", "MatMul",    "Transpose", "LogSoftmax"};
    return ops;
}

const char* kWhatToDo = "; export the model again (gradlab, or torch.onnx.export with opset 13..21 and "
                        "the supported operators listed by `gradlab infer --help`)";

// Elements of a shape, refusing negative extents and totals over kOnnxMaxElements (a
// bound that also keeps the product from overflowing).
std::int64_t checked_numel(const Shape& shape, const std::string& what) {
    std::int64_t n = 1;
    for (std::int64_t d : shape) {
        check(d >= 0, "ONNX: " + what + " has a negative dimension " + shape_str(shape) + kWhatToDo);
        check(d == 0 || n <= kOnnxMaxElements / d,
              "ONNX: " + what + " of shape " + shape_str(shape) + " has more than " +
                  std::to_string(kOnnxMaxElements) + " elements, the most this runtime accepts");
        n *= d;
    }
    return n;
}

Tensor tensor_of(const onnx::TensorProto& t) {
    const std::string what = "initializer '" + t.name() + "'";
    check(t.data_type() == onnx::TensorProto::FLOAT,
          "ONNX: " + what + " has element type " + std::to_string(t.data_type()) + ", only float32 (1) is supported");
    check(!t.has_data_location() || t.data_location() == onnx::TensorProto::DEFAULT,
          "ONNX: " + what + " keeps its data in an external file; save the model with the weights inside it");
    const Shape shape(t.dims().begin(), t.dims().end());
    const std::int64_t n = checked_numel(shape, what);
    std::vector<float> numbers(static_cast<std::size_t>(n));
    if (!t.raw_data().empty()) {
        check(static_cast<std::int64_t>(t.raw_data().size()) == n * 4,
              "ONNX: " + what + " of shape " + shape_str(shape) + " holds " + std::to_string(t.raw_data().size()) +
                  " bytes, not " + std::to_string(n * 4) + " (a truncated or corrupt file?)" + kWhatToDo);
        std::memcpy(numbers.data(), t.raw_data().data(), t.raw_data().size());
    } else {
        check(t.float_data_size() == n, "ONNX: " + what + " of shape " + shape_str(shape) + " holds " +
                                            std::to_string(t.float_data_size()) + " numbers, not " + std::to_string(n) +
                                            kWhatToDo);
        std::copy(t.float_data().begin(), t.float_data().end(), numbers.begin());
    }
    return from_vector(numbers, shape);
}

Shape input_shape(const onnx::ValueInfoProto& info, std::int64_t batch) {
    const std::string what = "graph input '" + info.name() + "'";
    check(info.type().has_tensor_type(), "ONNX: " + what + " is not a tensor");
    const auto& tt = info.type().tensor_type();
    check(tt.elem_type() == onnx::TensorProto::FLOAT, "ONNX: " + what + " has element type " +
                                                          std::to_string(tt.elem_type()) +
                                                          ", only float32 (1) is supported");
    check(tt.has_shape(), "ONNX: " + what + " has no shape; this runtime plans memory ahead and needs one");
    Shape shape;
    for (const auto& d : tt.shape().dim())
        shape.push_back(d.has_dim_value() ? d.dim_value() : batch);  // a symbolic dimension is the batch
    checked_numel(shape, what);
    return shape;
}

std::int64_t int_attribute(const onnx::NodeProto& n, const std::string& name, std::int64_t fallback) {
    for (const auto& a : n.attribute())
        if (a.name() == name) return a.i();
    return fallback;
}

float float_attribute(const onnx::NodeProto& n, const std::string& name, float fallback) {
    for (const auto& a : n.attribute())
        if (a.name() == name) return a.f();
    return fallback;
}

// Reads one ONNX node into @p g; @p ids maps ONNX names to value ids.
void import_node(const onnx::NodeProto& n, Graph& g, std::map<std::string, int>& ids) {
    const std::string where = "node '" + n.name() + "' (" + n.op_type() + ")";
    std::vector<int> in;
    for (const std::string& name : n.input()) {
        if (name.empty()) continue;  // an optional input left out (Gemm's C written as "")
        const auto it = ids.find(name);
        check(it != ids.end(), "ONNX: " + where + " reads '" + name +
                                   "', which no earlier node, input or initializer defines (nodes must be in "
                                   "topological order)" + kWhatToDo);
        in.push_back(it->second);
    }
    check(n.output_size() == 1, "ONNX: " + where + " must have exactly one output");
    check(!ids.count(n.output(0)), "ONNX: " + where + " defines '" + n.output(0) +
                                        "', which is already defined (ONNX values are assigned once)" + kWhatToDo);
    const auto arity_is = [&](int count) {
        check(static_cast<int>(in.size()) == count,
              "ONNX: " + where + " has " + std::to_string(in.size()) + " inputs, expected " + std::to_string(count));
    };
    const auto node = [&](const std::string& op, const std::vector<int>& args, bool ta = false, bool tb = false) {
        try {
            return g.add_node(op, args, ta, tb);
        } catch (const Error& e) {
            throw Error("ONNX: " + where + ": " + e.what());
        }
    };
    int out = -1;
    const std::string& op = n.op_type();
    if (ir_op_of().count(op)) {
        arity_is(arity(ir_op_of().at(op)));
        out = node(ir_op_of().at(op), in);
    } else if (op == "MatMul") {
        arity_is(2);
        out = node("matmul", in);
    } else if (op == "Gemm") {
        check(in.size() == 2 || in.size() == 3, "ONNX: " + where + " needs 2 or 3 inputs");
        check(float_attribute(n, "alpha", 1.0f) == 1.0f && float_attribute(n, "beta", 1.0f) == 1.0f,
              "ONNX: " + where + " has alpha or beta other than 1, which this runtime does not support");
        out = node("matmul", {in[0], in[1]}, int_attribute(n, "transA", 0) != 0, int_attribute(n, "transB", 0) != 0);
        if (in.size() == 3) out = node("add", {out, in[2]});
    } else if (op == "Transpose") {
        arity_is(1);
        for (const auto& a : n.attribute())
            if (a.name() == "perm")
                check(a.ints_size() == 2 && a.ints(0) == 1 && a.ints(1) == 0,
                      "ONNX: " + where + " permutes other than [1, 0]; only 2-d transposes are supported");
        out = node("transpose", in);
    } else if (op == "LogSoftmax") {
        arity_is(1);
        const std::int64_t axis = int_attribute(n, "axis", -1);
        check(axis == -1 || axis == 1, "ONNX: " + where + " over axis " + std::to_string(axis) +
                                           "; only the last axis of a 2-d input is supported");
        out = node("log_softmax", in);
    }
    g.values[static_cast<std::size_t>(out)].name = n.output(0);
    checked_numel(g.values[static_cast<std::size_t>(out)].shape, where + "'s output");
    ids[n.output(0)] = out;
}

void check_opset(const onnx::ModelProto& m) {
    std::int64_t version = -1;
    for (const auto& o : m.opset_import())
        if (o.domain().empty() || o.domain() == "ai.onnx") version = o.version();
    check(version >= 0, std::string("ONNX: the model imports no version of the default operator set (opset_import is "
                                    "missing: a truncated file?)") + kWhatToDo);
    check(version >= 7 && version <= 21, "ONNX: opset " + std::to_string(version) +
                                             " is outside the versions this runtime knows (7..21)" + kWhatToDo);
}

// Every unsupported op type, named, in one message.
void check_ops(const onnx::GraphProto& graph) {
    std::set<std::string> unsupported;
    for (const auto& n : graph.node()) {
        if (!supported_ops().count(n.op_type()) || !(n.domain().empty() || n.domain() == "ai.onnx"))
            unsupported.insert(n.domain().empty() ? n.op_type() : n.domain() + "." + n.op_type());
    }
    if (unsupported.empty()) return;
    std::string list;
    for (const std::string& op : unsupported) list += (list.empty() ? "" : ", ") + op;
    throw Error("ONNX: unsupported operator(s): " + list + ". This runtime runs Gemm, MatMul, Add, Sub, Mul, Div, "
                "Neg, Relu, Sqrt, Transpose and LogSoftmax on float32; export the model with only these");
}

}  // namespace

std::string export_onnx(const Graph& g, const std::string& producer) {
    verify(g);
    check_exportable(g);
    onnx::ModelProto model;
    model.set_ir_version(onnx::IR_VERSION_2020_5_8);  // IR version 7, the one that goes with opset 13
    model.set_producer_name(producer);
    onnx::GraphProto& graph = *model.mutable_graph();
    graph.set_name("gradlab");
    for (const Value& v : g.values) {
        if (v.kind == ValueKind::Input) {
            check(v.dtype == DType::Float32, "ONNX export: input " + v.name + " is not float32");
            set_type(*graph.add_input(), v);
        } else if (v.kind != ValueKind::Temporary) {
            check(v.kind != ValueKind::State, "ONNX export: " + v.name +
                                                   " is optimizer state; export an inference graph (capture_forward)");
            add_initializer(graph, v);
        }
    }
    for (const Node& n : g.nodes) export_node(g, n, graph);
    for (int id : g.outputs) set_type(*graph.add_output(), g.values[static_cast<std::size_t>(id)]);
    model.add_opset_import()->set_version(kOnnxOpset);
    std::string bytes;
    check(model.SerializeToString(&bytes), "ONNX export: protobuf could not serialize the model");
    return bytes;
}

void save_onnx(const Graph& g, const std::string& path) {
    const std::string bytes = export_onnx(g);
    std::ofstream out(path, std::ios::binary);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    out.close();
    check(out.good(), "cannot write " + path + "; check that the folder exists and is writable");
}

Graph import_onnx(const std::string& bytes, std::int64_t batch) {
    check(batch >= 1, "ONNX: the batch size must be at least 1");
    check(static_cast<std::int64_t>(bytes.size()) <= kOnnxMaxBytes, "ONNX: the file is larger than " +
                                                                        std::to_string(kOnnxMaxBytes) + " bytes");
    onnx::ModelProto model;
    check(!bytes.empty() && model.ParseFromString(bytes),
          std::string("ONNX: the bytes are not an ONNX model (corrupt or truncated; protobuf could not parse "
                      "them)") + kWhatToDo);
    check(model.has_graph(), std::string("ONNX: the model has no graph") + kWhatToDo);
    check_opset(model);
    const onnx::GraphProto& graph = model.graph();
    check_ops(graph);

    Graph g;
    std::map<std::string, int> ids;
    for (const auto& t : graph.initializer()) {
        check(!ids.count(t.name()), "ONNX: the initializer name '" + t.name() + "' is used twice" + kWhatToDo);
        Value v;
        v.name = t.name();
        v.kind = ValueKind::Parameter;
        v.data = tensor_of(t);
        v.shape = v.data.shape();
        ids[v.name] = g.add_value(v);
    }
    for (const auto& info : graph.input()) {
        if (ids.count(info.name())) continue;  // older exporters list initializers as inputs too
        Value v;
        v.name = info.name();
        v.kind = ValueKind::Input;
        v.shape = input_shape(info, batch);
        ids[v.name] = g.add_value(v);
    }
    for (const auto& n : graph.node()) import_node(n, g, ids);
    check(graph.output_size() > 0, std::string("ONNX: the graph has no outputs") + kWhatToDo);
    for (const auto& out : graph.output()) {
        const auto it = ids.find(out.name());
        check(it != ids.end(), "ONNX: the graph output '" + out.name() + "' is not defined by any node" + kWhatToDo);
        g.outputs.push_back(it->second);
    }
    verify(g);
    return g;
}

Graph load_onnx(const std::string& path, std::int64_t batch) {
    std::ifstream in(path, std::ios::binary | std::ios::ate);
    check(in.good(), "cannot open " + path + "; give the path of an .onnx file");
    const std::streamoff size = in.tellg();
    check(size >= 0 && size <= kOnnxMaxBytes, path + ": not a readable file of at most " +
                                                  std::to_string(kOnnxMaxBytes) + " bytes");
    std::string bytes(static_cast<std::size_t>(size), '\0');
    in.seekg(0);
    in.read(bytes.data(), size);
    check(in.good(), "cannot read " + path);
    try {
        return import_onnx(bytes, batch);
    } catch (const Error& e) {
        throw Error(path + ": " + e.what());
    }
}

}  // namespace gl::graph
