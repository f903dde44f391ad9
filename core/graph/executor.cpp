#include "graph/executor.hpp"

#include <algorithm>
#include <cmath>

#include "base/error.hpp"
#include "kernels/cpu/elementwise.hpp"

namespace gl::graph {
namespace {

// True when @p t's elements lie row-major without gaps (Tensor::is_contiguous() builds
// a strides vector to compare with, an allocation a step must not make).
bool dense(const Tensor& t) {
    std::int64_t expected = 1;
    for (std::size_t d = t.shape().size(); d-- > 0;) {
        if (t.shape()[d] != 1 && t.strides()[d] != expected) return false;
        expected *= t.shape()[d];
    }
    return true;
}

std::int64_t numel(const Graph& g, int id) { return numel_of(g.values[static_cast<std::size_t>(id)].shape); }

// The compiled loop of an element-wise or fused node; pointers are filled per run.
FusedLoop compile_loop(const Graph& g, const Node& n) {
    const std::vector<FusedStep> program =
        n.op == "fused_elementwise" ? n.program : single_step_program(n.op, static_cast<int>(n.inputs.size()));
    FusedLoop loop;
    for (const FusedStep& s : program)
        loop.steps.push_back({ew_op(s.op), s.args.at(0), s.args.size() > 1 ? s.args[1] : s.args[0]});
    loop.inputs.assign(n.inputs.size(), nullptr);
    for (int id : n.inputs) loop.input_numel.push_back(numel(g, id));
    loop.outputs.assign(n.outputs.size(), nullptr);
    loop.output_registers =
        n.op == "fused_elementwise" ? n.output_registers : std::vector<int>{static_cast<int>(n.inputs.size())};
    loop.numel = numel(g, n.outputs[0]);
    return loop;
}

// out = the sum of @p in's leading rows down to @p out_numel elements (reduce_to).
void reduce_to(const float* in, std::int64_t in_numel, float* out, std::int64_t out_numel) {
    std::fill(out, out + out_numel, 0.0f);
    for (std::int64_t e = 0; e < in_numel; ++e) out[e % out_numel] += in[e];
}

void cross_entropy(const float* x, const std::int32_t* t, float* loss, float* log_probs, std::int64_t rows,
                   std::int64_t cols) {
    kernels::log_softmax_rows(x, log_probs, rows, cols);  // the eager op's kernel
    double total = 0.0;
    for (std::int64_t r = 0; r < rows; ++r) total -= log_probs[r * cols + t[r]];
    *loss = static_cast<float>(total / static_cast<double>(rows));
}

void cross_entropy_grad(const float* lp, const std::int32_t* t, const float* g, float* dx, std::int64_t rows,
                        std::int64_t cols) {
    const float scale = *g / static_cast<float>(rows);
    for (std::int64_t r = 0; r < rows; ++r)
        for (std::int64_t j = 0; j < cols; ++j)
            dx[r * cols + j] = (std::exp(lp[r * cols + j]) - (j == t[r] ? 1.0f : 0.0f)) * scale;
}

// Every value a node defines has bytes in the arena (or is an update, in its target's).
// Whether live values overlap is check_plan's question (compile() asks it).
void check_covers(const Graph& g, const MemoryPlan& plan) {
    check(plan.offset.size() == g.values.size() && plan.arena_bytes >= 0 && plan.arena_bytes % 4 == 0,
          "executor: the memory plan does not fit the graph (one offset per value, an arena of whole floats)");
    for (const Node& n : g.nodes)
        for (int id : n.outputs) {
            const Value& v = g.values[static_cast<std::size_t>(id)];
            if (v.updates >= 0) continue;
            const std::int64_t offset = plan.offset[static_cast<std::size_t>(id)];
            check(offset >= 0 && offset % 4 == 0 && offset + g.bytes_of(id) <= plan.arena_bytes,
                  "executor: the memory plan gives " + v.name + " no place in the arena");
        }
}

}  // namespace

Executor::Executor(Graph g, MemoryPlan plan) : graph_(std::move(g)), plan_(std::move(plan)) {
    verify(graph_);
    check_covers(graph_, plan_);
    arena_.assign(static_cast<std::size_t>(plan_.arena_bytes / 4), 0.0f);
    ptr_.assign(graph_.values.size(), nullptr);
    bound_.assign(graph_.values.size(), Tensor());
    scalars_.assign(graph_.values.size(), 0.0f);
    for (std::size_t id = 0; id < graph_.values.size(); ++id) {
        Value& v = graph_.values[id];
        if (v.kind == ValueKind::Constant || v.kind == ValueKind::Parameter || v.kind == ValueKind::State) {
            check(v.data.defined() && v.data.is_contiguous() && v.data.shape() == v.shape,
                  "executor: " + v.name + " has no contiguous tensor of its shape bound");
            ptr_[id] = v.data.raw_data();
        } else if (plan_.offset[id] >= 0) {
            ptr_[id] = arena_.data() + plan_.offset[id] / 4;
        } else if (v.kind == ValueKind::Input && v.shape.empty() && v.dtype == DType::Float32) {
            ptr_[id] = &scalars_[id];  // a per-step number, set with set_scalar
        }
    }
    for (std::size_t id = 0; id < graph_.values.size(); ++id)  // updates write into their targets
        if (graph_.values[id].updates >= 0) ptr_[id] = ptr_[static_cast<std::size_t>(graph_.values[id].updates)];
    for (const Node& n : graph_.nodes) {
        const bool loop = is_elementwise(n.op) || n.op == "fused_elementwise";
        loops_.push_back(loop ? compile_loop(graph_, n) : FusedLoop{});
        if (loop) scratch_.fit(loops_.back());
    }
    gemm_ = kernels::default_gemm().sgemm;
}

void Executor::bind(const std::string& name, const Tensor& t) { bind(graph_.find(name), t); }

void Executor::bind(int id, const Tensor& t) {
    // The checks build their messages only when they fail: binding is part of a step,
    // and a step allocates nothing.
    const Value& v = graph_.values.at(static_cast<std::size_t>(id));
    if (v.kind != ValueKind::Input) throw Error("executor: '" + v.name + "' is not an input of the graph");
    if (t.shape() != v.shape || t.dtype() != v.dtype)
        throw Error("executor: input '" + v.name + "' was captured as " + name_of(v.dtype) + " " + shape_str(v.shape) +
                    ", got " + name_of(t.dtype()) + " " + shape_str(t.shape()) +
                    "; a static graph runs one shape (capture again)");
    if (!dense(t)) throw Error("executor: input '" + v.name + "' must be contiguous");
    bound_[static_cast<std::size_t>(id)] = t;
    ptr_[static_cast<std::size_t>(id)] = t.raw_data();
}

void Executor::set_scalar(const std::string& name, double value) { set_scalar(graph_.find(name), value); }

void Executor::set_scalar(int id, double value) {
    const Value& v = graph_.values.at(static_cast<std::size_t>(id));
    if (v.kind != ValueKind::Input || !v.shape.empty() || v.dtype != DType::Float32)
        throw Error("executor: '" + v.name + "' is not a scalar float32 input");
    scalars_[static_cast<std::size_t>(id)] = static_cast<float>(value);
}

void Executor::run() {
    for (std::size_t id = 0; id < graph_.values.size(); ++id)
        if (ptr_[id] == nullptr && graph_.values[id].kind != ValueKind::Temporary)
            throw Error("executor: input '" + graph_.values[id].name + "' is not bound; bind() it before run()");
    for (std::size_t i = 0; i < graph_.nodes.size(); ++i) launch(i);
    const ExecStats one = per_run();
    stats_.runs += 1;
    stats_.kernels += one.kernels;
    stats_.bytes_moved += one.bytes_moved;
}

ExecStats Executor::per_run() const {
    ExecStats s;
    s.runs = 1;
    s.kernels = static_cast<std::int64_t>(graph_.nodes.size());
    for (const Node& n : graph_.nodes) {
        for (int id : n.inputs) s.bytes_moved += graph_.bytes_of(id);
        for (int id : n.outputs) s.bytes_moved += graph_.bytes_of(id);
    }
    return s;
}

void Executor::launch(std::size_t node) {
    const Node& n = graph_.nodes[node];
    FusedLoop& loop = loops_[node];
    if (!loop.steps.empty()) {
        for (std::size_t k = 0; k < n.inputs.size(); ++k) loop.inputs[k] = f32(n.inputs[k]);
        for (std::size_t k = 0; k < n.outputs.size(); ++k) loop.outputs[k] = f32(n.outputs[k]);
        run_fused_loop(loop, scratch_);
        return;
    }
    const auto shape = [&](int id) -> const Shape& { return graph_.values[static_cast<std::size_t>(id)].shape; };
    if (n.op == "matmul") {
        const Shape& a = shape(n.inputs[0]);
        const Shape& c = shape(n.outputs[0]);
        const std::int64_t k = n.trans_a ? a[0] : a[1];
        gemm_(kernels::dense_gemm_args(n.trans_a, n.trans_b, c[0], c[1], k, f32(n.inputs[0]), f32(n.inputs[1]),
                                       f32(n.outputs[0])));
    } else if (n.op == "transpose") {
        const Shape& a = shape(n.inputs[0]);
        const float* src = f32(n.inputs[0]);
        float* dst = f32(n.outputs[0]);
        for (std::int64_t r = 0; r < a[0]; ++r)
            for (std::int64_t col = 0; col < a[1]; ++col) dst[col * a[0] + r] = src[r * a[1] + col];
    } else if (n.op == "reduce_to") {
        reduce_to(f32(n.inputs[0]), numel(graph_, n.inputs[0]), f32(n.outputs[0]), numel(graph_, n.outputs[0]));
    } else if (n.op == "mean") {
        const std::int64_t count = numel(graph_, n.inputs[0]);
        double total = 0.0;
        for (std::int64_t e = 0; e < count; ++e) total += f32(n.inputs[0])[e];
        *f32(n.outputs[0]) = static_cast<float>(total / static_cast<double>(count));
    } else if (n.op == "log_softmax") {
        const Shape& x = shape(n.inputs[0]);
        kernels::log_softmax_rows(f32(n.inputs[0]), f32(n.outputs[0]), x[0], x[1]);
    } else if (n.op == "cross_entropy") {
        const Shape& x = shape(n.inputs[0]);
        cross_entropy(f32(n.inputs[0]), static_cast<const std::int32_t*>(ptr_[static_cast<std::size_t>(n.inputs[1])]),
                      f32(n.outputs[0]), f32(n.outputs[1]), x[0], x[1]);
    } else if (n.op == "cross_entropy_grad") {
        const Shape& x = shape(n.inputs[0]);
        cross_entropy_grad(f32(n.inputs[0]), static_cast<const std::int32_t*>(ptr_[static_cast<std::size_t>(n.inputs[1])]),
                           f32(n.inputs[2]), f32(n.outputs[0]), x[0], x[1]);
    } else {
        throw Error("executor: no kernel for op '" + n.op + "'");
    }
}

Tensor Executor::output(std::size_t i) const {
    const int id = graph_.outputs.at(i);
    const Value& v = graph_.values[static_cast<std::size_t>(id)];
    Tensor out = empty(v.shape, v.dtype);
    std::copy_n(static_cast<const char*>(ptr_[static_cast<std::size_t>(id)]), graph_.bytes_of(id),
                static_cast<char*>(out.raw_data()));
    return out;
}

double Executor::output_item(std::size_t i) const {
    return *static_cast<const float*>(ptr_[static_cast<std::size_t>(graph_.outputs.at(i))]);
}

}  // namespace gl::graph
