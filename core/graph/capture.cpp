#include "graph/capture.hpp"

#include <map>
#include <set>
#include <string>

#include "autograd/grad_mode.hpp"
#include "base/error.hpp"
#include "graph/autodiff.hpp"
#include "ops/op_trace.hpp"
#include "ops/ops.hpp"

namespace gl::graph {
namespace {

// Records each op the traced code calls. Tensors are recognised by their TensorImpl:
// the inputs and parameters are registered before the run, every op output after its
// op; a tensor the tracer has never seen (a number turned into a scalar) is a Constant.
class Tracer {
public:
    explicit Tracer(Graph& g) : g_(g) {}

    int add_bound(const Tensor& t, const std::string& name, ValueKind kind) {
        Value v;
        v.name = name;
        v.shape = t.shape();
        v.dtype = t.dtype();
        v.kind = kind;
        if (kind != ValueKind::Input) v.data = t;
        const int id = g_.add_value(v);
        ids_[&t.impl()] = id;
        return id;
    }

    int id_of(const Tensor& t) const {
        const auto found = ids_.find(&t.impl());
        check(found != ids_.end(), "capture: the traced code returned a tensor that no traced op made");
        return found->second;
    }

    void on_op(const TracedOp& op) {
        std::vector<int> inputs;
        for (const Tensor& t : op.inputs) inputs.push_back(value_for(t));
        const std::string name = op.op;
        if (name == "transpose")
            check(op.output.dim() == 2, "capture: only 2-d transposes are in the IR");
        const int out = g_.add_node(name, inputs);  // throws for ops the IR does not have
        ids_[&op.output.impl()] = out;
    }

private:
    int value_for(const Tensor& t) {
        const auto found = ids_.find(&t.impl());
        if (found != ids_.end()) return found->second;
        check(t.numel() <= 1 || !t.requires_grad(), "capture: a tensor that requires grad entered the trace "
                                                    "without being registered; is it a parameter of another module?");
        Value v;
        v.shape = t.shape();
        v.dtype = t.dtype();
        v.kind = ValueKind::Constant;
        v.data = t.clone();  // the number as it was when traced
        const int id = g_.add_value(v);
        ids_[&t.impl()] = id;
        keep_.push_back(t);  // keep the impl alive so its address is not reused by another tensor
        return id;
    }

    Graph& g_;
    std::map<const TensorImpl*, int> ids_;
    std::vector<Tensor> keep_;
};

// Runs @p body with @p tracer observing every op, and without autograd recording.
template <class Body>
void trace(Tracer& tracer, std::vector<Tensor>& keep_alive, Body&& body) {
    NoGradGuard no_grad;
    const OpObserver previous = set_op_observer([&](const TracedOp& op) {
        keep_alive.push_back(op.output);  // outputs stay alive so addresses stay unique
        tracer.on_op(op);
    });
    try {
        body();
    } catch (...) {
        set_op_observer(previous);
        throw;
    }
    set_op_observer(previous);
}

// Nodes whose results never reach an output: for a trace, computed from the inputs and
// then (presumably) read by the program. A branch on such a value is fixed in the graph.
void note_unused_computations(Graph& g) {
    std::set<int> needed(g.outputs.begin(), g.outputs.end());
    for (std::size_t i = g.nodes.size(); i-- > 0;) {
        const Node& n = g.nodes[i];
        bool used = false;
        for (int out : n.outputs) used = used || needed.count(out);
        if (used) {
            needed.insert(n.inputs.begin(), n.inputs.end());
            continue;
        }
        g.notes.push_back("node " + std::to_string(i) + " (" + n.op + ") computed " +
                          g.values[static_cast<std::size_t>(n.outputs[0])].name +
                          " from the inputs but no output uses it: if the program read it to choose a path "
                          "(data-dependent control flow), this trace fixed the path taken for the example "
                          "input and the graph replays that path for every input");
    }
}

std::vector<int> register_parameters(Tracer& tracer, nn::Module& model) {
    std::vector<int> ids;
    for (const auto& [name, p] : model.named_parameters()) ids.push_back(tracer.add_bound(p, name, ValueKind::Parameter));
    return ids;
}

// Adam's update of one parameter as element-wise ops, in the order of
// kernels::adam_step: m = b1 m + (1 - b1) g; v = b2 v + (1 - b2) g g;
// p = p - step_size m / (sqrt(v) inv_sqrt_c2 + eps).
void append_adam_update(Graph& g, int p, int grad, int m, int v, const AdamSettings& s) {
    const int one = add_constant(g, 1.0);
    const int b1 = add_constant(g, s.beta1), b2 = add_constant(g, s.beta2), eps = add_constant(g, s.eps);
    const int step_size = g.find(kAdamStepSize), inv_sqrt_c2 = g.find(kAdamInvSqrtC2);
    const int m_new = g.add_node("add", {g.add_node("mul", {b1, m}),
                                         g.add_node("mul", {g.add_node("sub", {one, b1}), grad})});
    const int v_new = g.add_node(
        "add", {g.add_node("mul", {b2, v}), g.add_node("mul", {g.add_node("mul", {g.add_node("sub", {one, b2}), grad}), grad})});
    const int denom = g.add_node("add", {g.add_node("mul", {g.add_node("sqrt", {v_new}), inv_sqrt_c2}), eps});
    const int p_new = g.add_node("sub", {p, g.add_node("div", {g.add_node("mul", {step_size, m_new}), denom})});
    g.values[static_cast<std::size_t>(m_new)].updates = m;
    g.values[static_cast<std::size_t>(v_new)].updates = v;
    g.values[static_cast<std::size_t>(p_new)].updates = p;
}

}  // namespace

Graph capture_forward(nn::Module& model, const Tensor& example) {
    Graph g;
    Tracer tracer(g);
    tracer.add_bound(example, "x", ValueKind::Input);
    register_parameters(tracer, model);
    std::vector<Tensor> keep;
    Tensor out;
    trace(tracer, keep, [&] { out = model.forward(example); });
    g.outputs = {tracer.id_of(out)};
    note_unused_computations(g);
    verify(g);
    return g;
}

Graph capture_training_step(nn::Module& model, const Tensor& x, const Tensor& targets,
                            const AdamSettings& adam, std::vector<Tensor>& moments) {
    Graph g;
    Tracer tracer(g);
    tracer.add_bound(x, "x", ValueKind::Input);
    tracer.add_bound(targets, "targets", ValueKind::Input);
    const std::vector<int> params = register_parameters(tracer, model);
    std::vector<Tensor> keep;
    Tensor loss;
    trace(tracer, keep, [&] { loss = cross_entropy(model.forward(x), targets); });
    const int loss_id = tracer.id_of(loss);
    g.outputs = {loss_id};
    note_unused_computations(g);
    const std::vector<int> grads = append_backward(g, loss_id, params);
    for (const char* name : {kAdamStepSize, kAdamInvSqrtC2}) {
        Value v;
        v.name = name;
        v.kind = ValueKind::Input;
        g.add_value(v);
    }
    moments.clear();
    for (std::size_t i = 0; i < params.size(); ++i) {
        const Value& p = g.values[static_cast<std::size_t>(params[i])];
        int state[2];
        for (int k = 0; k < 2; ++k) {
            moments.push_back(zeros(p.shape, p.dtype));
            Value s;
            s.name = p.name + (k == 0 ? ".adam_m" : ".adam_v");
            s.shape = p.shape;
            s.kind = ValueKind::State;
            s.data = moments.back();
            state[k] = g.add_value(s);
        }
        append_adam_update(g, params[i], grads[i], state[0], state[1], adam);
    }
    verify(g);
    return g;
}

}  // namespace gl::graph
