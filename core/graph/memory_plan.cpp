#include "graph/memory_plan.hpp"

#include <algorithm>

#include "base/error.hpp"

namespace gl::graph {
namespace {

bool overlaps(const Lifetime& a, const Lifetime& b) { return a.first <= b.last && b.first <= a.last; }

}  // namespace

std::int64_t planned_bytes(const Graph& g, int id) {
    return (g.bytes_of(id) + kPlanAlignment - 1) / kPlanAlignment * kPlanAlignment;
}

std::vector<Lifetime> lifetimes(const Graph& g) {
    // LAB 13 BEGIN: value lifetimes
    // A value is born at the node that defines it and dies after the last node that
    // reads it; a value that is returned lives past the last node. Values from outside
    // (inputs, parameters, state, constants) and in-place updates (Value::updates >= 0:
    // they live in their target's bytes) are not planned.
    std::vector<Lifetime> life(g.values.size());
    for (std::size_t i = 0; i < g.nodes.size(); ++i)
        for (int out : g.nodes[i].outputs) {
            const Value& v = g.values[static_cast<std::size_t>(out)];
            if (v.kind != ValueKind::Temporary || v.updates >= 0) continue;
            life[static_cast<std::size_t>(out)] = {static_cast<int>(i), static_cast<int>(i)};
        }
    for (std::size_t i = 0; i < g.nodes.size(); ++i)
        for (int in : g.nodes[i].inputs) {
            Lifetime& l = life[static_cast<std::size_t>(in)];
            if (l.first >= 0) l.last = std::max(l.last, static_cast<int>(i));
        }
    for (int out : g.outputs) {
        Lifetime& l = life[static_cast<std::size_t>(out)];
        if (l.first >= 0) l.last = static_cast<int>(g.nodes.size());
    }
    return life;
    // LAB 13 END
}

MemoryPlan plan_memory(const Graph& g) {
    // LAB 13 BEGIN: the liveness-based planner
    // Greedy by size (as TensorFlow Lite's arena planner): place the values largest
    // first, each at the lowest offset where it overlaps no already placed value whose
    // lifetime overlaps its own. Big buffers placed first leave gaps the small ones fill;
    // placing in program order instead strands a late big buffer above the small ones.
    const std::vector<Lifetime> life = lifetimes(g);
    std::vector<int> order;
    for (std::size_t id = 0; id < g.values.size(); ++id)
        if (life[id].first >= 0) order.push_back(static_cast<int>(id));
    std::stable_sort(order.begin(), order.end(),
                     [&](int a, int b) { return planned_bytes(g, a) > planned_bytes(g, b); });
    MemoryPlan plan;
    plan.offset.assign(g.values.size(), -1);
    std::vector<int> placed;
    for (int id : order) {
        // The placed values alive at the same time, by offset: the gaps between them.
        std::vector<int> conflicts;
        for (int other : placed)
            if (overlaps(life[static_cast<std::size_t>(id)], life[static_cast<std::size_t>(other)]))
                conflicts.push_back(other);
        std::sort(conflicts.begin(), conflicts.end(), [&](int a, int b) {
            return plan.offset[static_cast<std::size_t>(a)] < plan.offset[static_cast<std::size_t>(b)];
        });
        const std::int64_t bytes = planned_bytes(g, id);
        std::int64_t offset = 0;
        for (int other : conflicts) {
            const std::int64_t start = plan.offset[static_cast<std::size_t>(other)];
            if (start - offset >= bytes) break;  // the gap before this value fits
            offset = std::max(offset, start + planned_bytes(g, other));
        }
        plan.offset[static_cast<std::size_t>(id)] = offset;
        plan.arena_bytes = std::max(plan.arena_bytes, offset + bytes);
        placed.push_back(id);
    }
    return plan;
    // LAB 13 END
}

MemoryPlan plan_without_reuse(const Graph& g) {
    const std::vector<Lifetime> life = lifetimes(g);
    MemoryPlan plan;
    plan.offset.assign(g.values.size(), -1);
    for (std::size_t id = 0; id < g.values.size(); ++id) {
        if (life[id].first < 0) continue;
        plan.offset[id] = plan.arena_bytes;
        plan.arena_bytes += planned_bytes(g, static_cast<int>(id));
    }
    return plan;
}

std::int64_t live_set_bound(const Graph& g) {
    const std::vector<Lifetime> life = lifetimes(g);
    std::int64_t bound = 0;
    for (int i = 0; i <= static_cast<int>(g.nodes.size()); ++i) {
        std::int64_t live = 0;
        for (std::size_t id = 0; id < g.values.size(); ++id)
            if (life[id].first >= 0 && life[id].first <= i && i <= life[id].last)
                live += planned_bytes(g, static_cast<int>(id));
        bound = std::max(bound, live);
    }
    return bound;
}

void check_plan(const Graph& g, const MemoryPlan& plan) {
    const std::vector<Lifetime> life = lifetimes(g);
    check(plan.offset.size() == g.values.size(), "memory plan: one offset per value expected");
    std::vector<int> planned;
    for (std::size_t id = 0; id < g.values.size(); ++id) {
        if (life[id].first < 0) continue;
        const std::int64_t end = plan.offset[id] + planned_bytes(g, static_cast<int>(id));
        check(plan.offset[id] >= 0 && end <= plan.arena_bytes,
              "memory plan: " + g.values[id].name + " lies outside the arena");
        planned.push_back(static_cast<int>(id));
    }
    for (std::size_t a = 0; a < planned.size(); ++a)
        for (std::size_t b = a + 1; b < planned.size(); ++b) {
            const auto ia = static_cast<std::size_t>(planned[a]), ib = static_cast<std::size_t>(planned[b]);
            if (!overlaps(life[ia], life[ib])) continue;
            const bool apart = plan.offset[ia] + planned_bytes(g, planned[a]) <= plan.offset[ib] ||
                               plan.offset[ib] + planned_bytes(g, planned[b]) <= plan.offset[ia];
            check(apart, "memory plan: " + g.values[ia].name + " and " + g.values[ib].name +
                             " are alive at the same node but share bytes");
        }
}

}  // namespace gl::graph
