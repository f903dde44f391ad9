// The output-stationary dataflow: C's tile stays in the cells, A flows right and B flows
// down, each skewed so that A(m0 + r, k) and B(k, n0 + c) meet in cell (r, c) at cycle
// k + r + c. Unlike weight-stationary, no partial sum moves until the tile is done, but
// both operands flow, and every tile of C needs a pass over all of K.
#include "systolic/output_stationary.hpp"

#include "systolic/grid.hpp"

namespace gl::systolic {
namespace {

// One cell's step: pass A and B on; when both are real, add their product to the sum.
template <class T>
OsCell<T> os_cell_step(const OsCell<T>& cell, Wire<T> a_in, Wire<T> b_in) {
    using Acc = Accumulator<T>;
    OsCell<T> next = cell;
    next.a = a_in;
    next.b = b_in;
    if (a_in.valid && b_in.valid)
        next.acc = {cell.acc.value + static_cast<Acc>(a_in.value) * static_cast<Acc>(b_in.value), true};
    return next;
}

// The skewed feeds: array row r gets A(m0 + r, t - r); array column c gets B(t - c, n0 + c).
template <class T>
Wire<T> os_feed_a(const Matrix<T>& A, const OsPass& pass, std::int64_t r, std::int64_t t, Counts& counts) {
    const std::int64_t k = t - r;
    if (k < 0 || k >= A.cols || r >= pass.m_used) return {};
    ++counts.a_reads;
    return {A.at(pass.m0 + r, k), true};
}

template <class T>
Wire<T> os_feed_b(const Matrix<T>& B, const OsPass& pass, std::int64_t c, std::int64_t t, Counts& counts) {
    const std::int64_t k = t - c;
    if (k < 0 || k >= B.rows || c >= pass.n_used) return {};
    ++counts.b_reads;
    return {B.at(k, pass.n0 + c), true};
}

template <class T>
CellView view(const OsCell<T>& cell, bool mac) {
    return {mac, cell.a.valid, static_cast<double>(cell.a.value), cell.b.valid, static_cast<double>(cell.b.value),
            static_cast<double>(cell.acc.value)};
}

// Shifts the finished tile out of the bottom edge, a row per cycle, into C_out.
template <class T>
void drain(std::vector<OsCell<T>>& grid, const OsPass& pass, ArrayShape array, Matrix<Accumulator<T>>& C_out,
           Counts& counts, Trace* trace, std::int64_t pass_index) {
    const std::int64_t R = array.rows, C = array.cols;
    const std::vector<char> no_macs(grid.size(), 0);
    for (std::int64_t step = 0; step < R; ++step) {
        const std::int64_t m = R - 1 - step;  // the tile row now in the bottom row of the array
        for (std::int64_t c = 0; c < C; ++c) {
            const Wire<Accumulator<T>> out = grid[(R - 1) * C + c].acc;
            if (!out.valid) continue;
            C_out.at(pass.m0 + m, pass.n0 + c) = out.value;
            ++counts.c_writes;
        }
        shift_down(grid, array, &OsCell<T>::acc, counts.psum_hops);
        for (std::int64_t c = 0; c < C; ++c) grid[c].acc = {};
        ++counts.cycles;
        record_frame(trace, grid, no_macs, counts.cycles - 1, pass_index, "drain", view<T>);
    }
}

}  // namespace

template <class T>
void os_tile_pass(const Matrix<T>& A, const Matrix<T>& B, const OsPass& pass, ArrayShape array,
                  Matrix<Accumulator<T>>& C_out, Counts& counts, Trace* trace, std::int64_t pass_index) {
    const std::int64_t R = array.rows, C = array.cols, K = A.cols;
    std::vector<OsCell<T>> grid(static_cast<std::size_t>(R * C)), next(grid.size());
    std::vector<Wire<T>> left_edge(static_cast<std::size_t>(R)), top_edge(static_cast<std::size_t>(C));
    std::vector<char> did_mac(trace ? grid.size() : 0);
    // The last pair, A(m0 + R-1, K-1) and B(K-1, n0 + C-1), meets in the far corner at
    // cycle (K - 1) + (R - 1) + (C - 1).
    const std::int64_t stream_cycles = K + R + C - 2;
    for (std::int64_t t = 0; t < stream_cycles; ++t) {
        for (std::int64_t r = 0; r < R; ++r) left_edge[r] = os_feed_a(A, pass, r, t, counts);
        for (std::int64_t c = 0; c < C; ++c) top_edge[c] = os_feed_b(B, pass, c, t, counts);
        for (std::int64_t r = 0; r < R; ++r)
            for (std::int64_t c = 0; c < C; ++c) {
                const Wire<T> a_in = c == 0 ? left_edge[r] : grid[r * C + c - 1].a;
                const Wire<T> b_in = r == 0 ? top_edge[c] : grid[(r - 1) * C + c].b;
                next[r * C + c] = os_cell_step(grid[r * C + c], a_in, b_in);
                const bool mac = a_in.valid && b_in.valid;
                counts.macs += mac;
                counts.operand_hops += (c > 0 && a_in.valid) + (r > 0 && b_in.valid);
                if (trace) did_mac[r * C + c] = mac;
            }
        grid.swap(next);
        ++counts.cycles;
        record_frame(trace, grid, did_mac, counts.cycles - 1, pass_index, "stream", view<T>);
    }
    drain(grid, pass, array, C_out, counts, trace, pass_index);
}

template void os_tile_pass(const Matrix<std::int8_t>&, const Matrix<std::int8_t>&, const OsPass&, ArrayShape,
                           Matrix<std::int32_t>&, Counts&, Trace*, std::int64_t);
template void os_tile_pass(const Matrix<float>&, const Matrix<float>&, const OsPass&, ArrayShape, Matrix<float>&,
                           Counts&, Trace*, std::int64_t);

}  // namespace gl::systolic
