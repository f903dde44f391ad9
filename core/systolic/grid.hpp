/// @file
/// @brief What both dataflows do to the whole grid: shift one register of every cell down
/// a row (loading weights, draining results), and record a frame of the trace.
#pragma once

#include <utility>
#include <vector>

#include "systolic/systolic.hpp"

namespace gl::systolic {

/// Shifts register @p field of every cell down one row (row r takes row r - 1's; row 0
/// keeps its own, for the caller to refill) and adds the real values moved to @p hops.
template <class Cell, class Reg>
void shift_down(std::vector<Cell>& grid, ArrayShape array, Reg Cell::*field, std::int64_t& hops) {
    for (std::int64_t r = array.rows - 1; r >= 1; --r)
        for (std::int64_t c = 0; c < array.cols; ++c) {
            const Reg from_above = grid[(r - 1) * array.cols + c].*field;
            grid[r * array.cols + c].*field = from_above;
            hops += from_above.valid;
        }
}

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
