/// @file
/// @brief Static memory planning: every temporary gets an offset in one arena, fixed
/// before the first run, with buffers reused when lifetimes do not overlap.
///
/// Owns: value lifetimes, the planner (Lab 13), the plan without reuse that it is
/// compared with, and the lower bound no plan can beat (the largest set of values
/// alive at once). Knows nothing about how values are computed.
#pragma once

#include <cstdint>
#include <vector>

#include "graph/ir.hpp"

namespace gl::graph {

/// Offsets and sizes are multiples of this many bytes (a cache line; SIMD-aligned).
inline constexpr std::int64_t kPlanAlignment = 64;

/// The bytes value @p id takes in a plan: its size rounded up to kPlanAlignment.
std::int64_t planned_bytes(const Graph& g, int id);

/// When a temporary is alive, in node indices: from the node that defines it to the
/// last node that reads it (graph outputs: to g.nodes.size(), past the last node).
struct Lifetime {
    int first = -1;  ///< defining node; -1 when the value is not planned
    int last = -1;   ///< last node that needs it
};

/// The lifetime of every value (indexed by value id). Only Temporaries that a node
/// defines and that are not in-place updates are planned; all others get {-1, -1}.
std::vector<Lifetime> lifetimes(const Graph& g);

/// Where each planned value lives in the arena.
struct MemoryPlan {
    std::vector<std::int64_t> offset;  ///< byte offset per value id; -1 when not planned
    std::int64_t arena_bytes = 0;      ///< the arena's size: the planned peak
};

/// Plans the temporaries of @p g, greedy by size: largest first, each value at the
/// lowest offset where it overlaps no placed value alive at the same time, so values
/// whose lifetimes do not overlap share bytes. Two values alive at the same node never
/// overlap.
MemoryPlan plan_memory(const Graph& g);

/// Every temporary in its own bytes, nothing reused (what a graph runs with unplanned).
MemoryPlan plan_without_reuse(const Graph& g);

/// The largest total planned_bytes of values alive at one node: no plan's arena can be
/// smaller.
std::int64_t live_set_bound(const Graph& g);

/// Throws gl::Error when two values of @p plan that are alive at the same node overlap,
/// or a planned value lies outside the arena.
void check_plan(const Graph& g, const MemoryPlan& plan);

}  // namespace gl::graph
