#include "graph/passes.hpp"

#include <map>
#include <numeric>
#include <set>

#include "base/error.hpp"
#include "graph/fused_loop.hpp"

namespace gl::graph {
namespace {

Value& value(Graph& g, int id) { return g.values[static_cast<std::size_t>(id)]; }

// The node index that defines each value, or -1 (from outside, or no longer defined).
std::vector<int> producers(const Graph& g) {
    std::vector<int> producer(g.values.size(), -1);
    for (std::size_t i = 0; i < g.nodes.size(); ++i)
        for (int out : g.nodes[i].outputs) producer[static_cast<std::size_t>(out)] = static_cast<int>(i);
    return producer;
}

// Values a run must produce: the graph's outputs and every in-place update.
std::set<int> roots(const Graph& g) {
    std::set<int> r(g.outputs.begin(), g.outputs.end());
    for (const Node& n : g.nodes)
        for (int out : n.outputs)
            if (g.values[static_cast<std::size_t>(out)].updates >= 0) r.insert(out);
    return r;
}

}  // namespace

int eliminate_dead_code(Graph& g) {
    std::set<int> needed = roots(g);
    std::vector<bool> keep(g.nodes.size(), false);
    for (std::size_t i = g.nodes.size(); i-- > 0;) {
        for (int out : g.nodes[i].outputs) keep[i] = keep[i] || needed.count(out) > 0;
        if (keep[i]) needed.insert(g.nodes[i].inputs.begin(), g.nodes[i].inputs.end());
    }
    std::vector<Node> kept;
    for (std::size_t i = 0; i < g.nodes.size(); ++i)
        if (keep[i]) kept.push_back(std::move(g.nodes[i]));
    const int removed = static_cast<int>(g.nodes.size() - kept.size());
    g.nodes = std::move(kept);
    return removed;
}

int fold_constants(Graph& g) {
    int folded = 0;
    std::vector<Node> kept;
    for (Node& n : g.nodes) {
        bool all_constant = is_elementwise(n.op);
        for (int id : n.inputs) all_constant = all_constant && value(g, id).kind == ValueKind::Constant;
        if (!all_constant) {
            kept.push_back(std::move(n));
            continue;
        }
        // Run the node's own loop on the constants now, once, instead of every step.
        Value& out = value(g, n.outputs[0]);
        out.kind = ValueKind::Constant;
        out.data = empty(out.shape, DType::Float32);
        FusedLoop loop;
        loop.numel = numel_of(out.shape);
        for (int id : n.inputs) {
            loop.inputs.push_back(value(g, id).data.data<float>());
            loop.input_numel.push_back(value(g, id).data.numel());
        }
        const EwOp op = ew_op(n.op);
        loop.steps = {{op, 0, n.inputs.size() > 1 ? 1 : 0}};
        loop.outputs = {out.data.data<float>()};
        loop.output_registers = {static_cast<int>(n.inputs.size())};
        LoopScratch scratch;
        scratch.fit(loop);
        run_fused_loop(loop, scratch);
        ++folded;
    }
    g.nodes = std::move(kept);
    return folded;
}

int fold_transposes(Graph& g) {
    const std::vector<int> producer = producers(g);
    const auto producing = [&](int id) -> const Node* {
        const int p = producer[static_cast<std::size_t>(id)];
        return p < 0 ? nullptr : &g.nodes[static_cast<std::size_t>(p)];
    };
    int changed = 0;
    for (Node& n : g.nodes) {
        if (n.op == "matmul") {
            for (std::size_t k = 0; k < 2; ++k) {
                const Node* t = producing(n.inputs[k]);
                if (!t || t->op != "transpose") continue;
                n.inputs[k] = t->inputs[0];  // read the original...
                bool& flag = k == 0 ? n.trans_a : n.trans_b;
                flag = !flag;  // ...the other way round
                ++changed;
            }
        } else if (n.op == "transpose") {
            // (op(A) op(B))^T = op(B)^T op(A)^T: a transposed product is the product of
            // the operands swapped, so the transpose (a copy) becomes no work at all.
            const Node* m = producing(n.inputs[0]);
            if (!m || m->op != "matmul") continue;
            const Node swapped = *m;
            n.op = "matmul";
            n.inputs = {swapped.inputs[1], swapped.inputs[0]};
            n.trans_a = !swapped.trans_b;
            n.trans_b = !swapped.trans_a;
            ++changed;
        }
    }
    return changed;
}

int fuse_elementwise(Graph& g) {
    // LAB 13 BEGIN: element-wise fusion
    // Walk the nodes in order. An element-wise node joins the groups that produce its
    // inputs when they have its loop shape (its output's shape) and are still "open":
    // no node outside a group has read one of its values yet (the fused node will sit
    // where its last member was, so an earlier outside reader would read too early).
    // Joining two groups merges them. Then each group of two or more nodes becomes one
    // fused_elementwise node: its inputs are the values its members read from outside,
    // its outputs the members' values that are read outside, returned, or updates.
    const std::vector<int> producer = producers(g);
    std::vector<int> group_of(g.nodes.size(), -1);  // node -> group id (after merging: find())
    std::vector<int> parent;                         // union-find over group ids
    std::vector<bool> closed;
    const auto find = [&](int x) {
        while (parent[static_cast<std::size_t>(x)] != x) x = parent[static_cast<std::size_t>(x)];
        return x;
    };
    const auto loop_shape = [&](std::size_t node) { return value(g, g.nodes[node].outputs[0]).shape; };
    std::vector<std::size_t> group_head(0);  // a member of each group, for its loop shape
    for (std::size_t i = 0; i < g.nodes.size(); ++i) {
        const Node& n = g.nodes[i];
        std::set<int> joinable, read;
        for (int id : n.inputs) {
            const int p = producer[static_cast<std::size_t>(id)];
            if (p < 0 || group_of[static_cast<std::size_t>(p)] < 0) continue;
            const int grp = find(group_of[static_cast<std::size_t>(p)]);
            read.insert(grp);
            if (is_elementwise(n.op) && !closed[static_cast<std::size_t>(grp)] &&
                loop_shape(group_head[static_cast<std::size_t>(grp)]) == loop_shape(i))
                joinable.insert(grp);
        }
        for (int grp : read)
            if (!joinable.count(grp)) closed[static_cast<std::size_t>(grp)] = true;  // read from outside
        if (!is_elementwise(n.op)) continue;
        const int mine = static_cast<int>(parent.size());
        parent.push_back(mine);
        closed.push_back(false);
        group_head.push_back(i);
        for (int grp : joinable) parent[static_cast<std::size_t>(grp)] = mine;
        group_of[i] = mine;
    }
    // Members of each group, in order; a group's fused node replaces its last member.
    std::map<int, std::vector<std::size_t>> members;
    for (std::size_t i = 0; i < g.nodes.size(); ++i)
        if (group_of[i] >= 0) members[find(group_of[i])].push_back(i);
    const std::set<int> returned = roots(g);
    std::vector<Node> result;
    for (std::size_t i = 0; i < g.nodes.size(); ++i) {
        if (group_of[i] < 0 || members[find(group_of[i])].size() < 2) {
            result.push_back(g.nodes[i]);
            continue;
        }
        const std::vector<std::size_t>& group = members[find(group_of[i])];
        if (i != group.back()) continue;  // emitted once, at its last member
        std::set<std::size_t> in_group(group.begin(), group.end());
        Node fused;
        fused.op = "fused_elementwise";
        fused.shape = loop_shape(i);
        std::map<int, int> reg;  // value id -> register
        // External inputs first (registers 0 .. k-1), then one register per member.
        for (std::size_t m : group)
            for (int id : g.nodes[m].inputs) {
                const int p = producer[static_cast<std::size_t>(id)];
                const bool inside = p >= 0 && in_group.count(static_cast<std::size_t>(p));
                if (!inside && !reg.count(id)) {
                    reg[id] = static_cast<int>(fused.inputs.size());
                    fused.inputs.push_back(id);
                }
            }
        for (std::size_t m : group) {
            FusedStep step;
            step.op = g.nodes[m].op;
            for (int id : g.nodes[m].inputs) step.args.push_back(reg.at(id));
            reg[g.nodes[m].outputs[0]] = static_cast<int>(fused.inputs.size() + fused.program.size());
            fused.program.push_back(step);
        }
        // Outputs: values needed after the loop (read outside the group, returned, updates).
        for (std::size_t m : group) {
            const int out = g.nodes[m].outputs[0];
            bool needed = returned.count(out) > 0;
            for (std::size_t j = 0; j < g.nodes.size() && !needed; ++j)
                if (!in_group.count(j))
                    for (int id : g.nodes[j].inputs) needed = needed || id == out;
            if (!needed) continue;
            fused.outputs.push_back(out);
            fused.output_registers.push_back(reg.at(out));
        }
        if (!fused.outputs.empty()) result.push_back(fused);  // else the whole chain was dead
    }
    g.nodes = std::move(result);
    return static_cast<int>(g.nodes.size());
    // LAB 13 END
}

void optimize(Graph& g, bool fuse) {
    fold_transposes(g);
    verify(g);
    fold_constants(g);
    verify(g);
    eliminate_dead_code(g);
    verify(g);
    if (!fuse) return;
    fuse_elementwise(g);
    verify(g);
}

}  // namespace gl::graph
