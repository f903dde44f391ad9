/// @file
/// @brief How a tile pass writes a frame of the trace: every cell's registers after a cycle.
#pragma once

#include <utility>
#include <vector>

#include "systolic/systolic.hpp"

namespace gl::systolic {

/// Appends the grid after cycle @p cycle to @p trace (nothing when it is null). @p view
/// turns a cell and whether it did a multiply-add into a CellView.
template <class Cell, class View>
void record_frame(Trace* trace, const std::vector<Cell>& grid, const std::vector<char>& did_mac,
                  std::int64_t cycle, std::int64_t pass, const char* phase, View view) {
    if (!trace) return;
    TraceFrame frame{cycle, pass, phase, {}};
    frame.cells.reserve(grid.size());
    for (std::size_t i = 0; i < grid.size(); ++i) frame.cells.push_back(view(grid[i], did_mac[i] != 0));
    trace->frames.push_back(std::move(frame));
}

}  // namespace gl::systolic
