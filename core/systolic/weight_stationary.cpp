// The weight-stationary dataflow (TPU v1): one cell's step, the skewed feed of A, and a
// tile pass that steps every cell of the grid every cycle.
//
// Why skew: a partial sum of C(m, n) moves down column n one row per cycle. For cell
// (r, n) to add A(m, k0 + r) * B(k0 + r, n) to it, that A value must arrive exactly when
// the sum does, so row r of the array gets its inputs r cycles after row 0. The outputs
// leave the bottom of column c c cycles after column 0's; the de-skew delays them back
// into whole rows.
#include "systolic/weight_stationary.hpp"

#include <deque>

#include "systolic/grid.hpp"

namespace gl::systolic {

template <class T>
WsCell<T> ws_cell_step(const WsCell<T>& cell, Wire<T> a_in, Wire<Accumulator<T>> psum_in) {
    // LAB 14 BEGIN: one weight-stationary cell's step
    // The weight stays. Latch a_in for the right neighbour. When both a_in and the weight
    // are real, pass down psum_in plus a_in times the weight (multiply in the accumulator's
    // type, Accumulator<T>: int32 for int8, so nothing overflows); otherwise pass psum_in
    // on unchanged.
    using Acc = Accumulator<T>;
    WsCell<T> next = cell;
    next.a = a_in;
    if (a_in.valid && cell.weight.valid)
        next.psum = {psum_in.value + static_cast<Acc>(a_in.value) * static_cast<Acc>(cell.weight.value), true};
    else
        next.psum = psum_in;
    return next;
    // LAB 14 END
}

template <class T>
Wire<T> ws_feed(const Matrix<T>& A, const WsPass& pass, std::int64_t r, std::int64_t t, Counts& counts) {
    // LAB 14 BEGIN: the skewed feed of A at the left edge
    // Row r of the array runs r cycles behind row 0: at cycle t it takes row m = t - r of A,
    // column k0 + r. Outside the tile (m before the first or past the last row of A, or an
    // array row past the tile's k_used) it gets a bubble, and nothing is read from memory.
    const std::int64_t m = t - r;
    if (m < 0 || m >= A.rows || r >= pass.k_used) return {};
    ++counts.a_reads;
    return {A.at(m, pass.k0 + r), true};
    // LAB 14 END
}

namespace {

// The de-skew: column c's results leave the bottom c cycles after column 0's, so column c
// is delayed C - 1 - c cycles more, and a whole row of results leaves together.
template <class V>
class Deskew {
public:
    explicit Deskew(std::int64_t cols) : lines_(static_cast<std::size_t>(cols)) {
        for (std::int64_t c = 0; c < cols; ++c) lines_[c].assign(static_cast<std::size_t>(cols - 1 - c), Wire<V>{});
    }
    // Takes this cycle's outputs of the bottom row in @p row and puts the row leaving the
    // delay lines in their place.
    void shift(std::vector<Wire<V>>& row) {
        for (std::size_t c = 0; c < lines_.size(); ++c) {
            lines_[c].push_back(row[c]);
            row[c] = lines_[c].front();
            lines_[c].pop_front();
        }
    }

private:
    std::vector<std::deque<Wire<V>>> lines_;
};

template <class T>
CellView view(const WsCell<T>& cell, bool mac) {
    return {mac, cell.a.valid, static_cast<double>(cell.a.value), cell.weight.valid,
            static_cast<double>(cell.weight.value), static_cast<double>(cell.psum.value)};
}

// Loads the pass's weights: rows of B enter at the top edge, the tile's last row first,
// and shift down one array row per cycle, so after R cycles row r holds B(k0 + r, n0 + c).
template <class T>
void load_weights(const Matrix<T>& B, const WsPass& pass, ArrayShape array, std::vector<WsCell<T>>& grid,
                  Counts& counts, Trace* trace, std::int64_t pass_index) {
    const std::int64_t R = array.rows, C = array.cols;
    for (WsCell<T>& cell : grid) cell = WsCell<T>{};  // the registers start the pass empty
    const std::vector<char> no_macs(grid.size(), 0);
    for (std::int64_t step = 0; step < R; ++step) {
        shift_down(grid, array, &WsCell<T>::weight, counts.operand_hops);
        const std::int64_t k = R - 1 - step;  // the tile row entering now
        for (std::int64_t c = 0; c < C; ++c) {
            const bool real = k < pass.k_used && c < pass.n_used;
            grid[c].weight = real ? Wire<T>{B.at(pass.k0 + k, pass.n0 + c), true} : Wire<T>{};
            counts.b_reads += real;
        }
        ++counts.cycles;
        record_frame(trace, grid, no_macs, counts.cycles - 1, pass_index, "load weights", view<T>);
    }
}

}  // namespace

template <class T>
void ws_tile_pass(const Matrix<T>& A, const Matrix<T>& B, const WsPass& pass, ArrayShape array,
                  Matrix<Accumulator<T>>& accumulators, Counts& counts, Trace* trace, std::int64_t pass_index) {
    using Acc = Accumulator<T>;
    const std::int64_t R = array.rows, C = array.cols, M = A.rows;
    std::vector<WsCell<T>> grid(static_cast<std::size_t>(R * C)), next(grid.size());
    load_weights(B, pass, array, grid, counts, trace, pass_index);

    std::vector<Wire<T>> left_edge(static_cast<std::size_t>(R));
    std::vector<Wire<Acc>> bottom(static_cast<std::size_t>(C));
    std::vector<char> did_mac(trace ? grid.size() : 0);
    Deskew<Acc> deskew(C);
    // A right feed delivers row M - 1 after M + R + C - 2 cycles; a wrong one is stopped
    // well after that, with an error, instead of running forever.
    const std::int64_t cycle_limit = 2 * (M + R + C);
    std::int64_t rows_out = 0;
    for (std::int64_t t = 0; rows_out < M; ++t) {
        if (t >= cycle_limit)
            throw Error("systolic: a weight-stationary pass delivered " + std::to_string(rows_out) + " of " +
                        std::to_string(M) + " rows in " + std::to_string(t) +
                        " cycles: check the skew of the feed (row r starts r cycles after row 0)");
        for (std::int64_t r = 0; r < R; ++r) left_edge[r] = ws_feed(A, pass, r, t, counts);
        // Every cell steps at once: each reads its neighbours' registers as they were at
        // the end of the last cycle (grid) and writes its own new ones (next).
        for (std::int64_t r = 0; r < R; ++r)
            for (std::int64_t c = 0; c < C; ++c) {
                const WsCell<T>& cell = grid[r * C + c];
                const Wire<T> a_in = c == 0 ? left_edge[r] : grid[r * C + c - 1].a;
                const Wire<Acc> psum_in = r == 0 ? Wire<Acc>{} : grid[(r - 1) * C + c].psum;
                next[r * C + c] = ws_cell_step(cell, a_in, psum_in);
                const bool mac = a_in.valid && cell.weight.valid;
                counts.macs += mac;
                counts.operand_hops += c > 0 && a_in.valid;
                counts.psum_hops += r > 0 && psum_in.valid;
                if (trace) did_mac[r * C + c] = mac;
            }
        grid.swap(next);
        ++counts.cycles;
        record_frame(trace, grid, did_mac, counts.cycles - 1, pass_index, "stream", view<T>);

        for (std::int64_t c = 0; c < C; ++c) bottom[c] = grid[(R - 1) * C + c].psum;
        deskew.shift(bottom);
        if (!bottom[0].valid) continue;  // no row of results leaves this cycle
        for (std::int64_t c = 0; c < pass.n_used; ++c) accumulators.at(rows_out, c) += bottom[c].value;
        ++rows_out;
    }
}

template WsCell<std::int8_t> ws_cell_step(const WsCell<std::int8_t>&, Wire<std::int8_t>, Wire<std::int32_t>);
template WsCell<float> ws_cell_step(const WsCell<float>&, Wire<float>, Wire<float>);
template Wire<std::int8_t> ws_feed(const Matrix<std::int8_t>&, const WsPass&, std::int64_t, std::int64_t, Counts&);
template Wire<float> ws_feed(const Matrix<float>&, const WsPass&, std::int64_t, std::int64_t, Counts&);
template void ws_tile_pass(const Matrix<std::int8_t>&, const Matrix<std::int8_t>&, const WsPass&, ArrayShape,
                           Matrix<std::int32_t>&, Counts&, Trace*, std::int64_t);
template void ws_tile_pass(const Matrix<float>&, const Matrix<float>&, const WsPass&, ArrayShape, Matrix<float>&,
                           Counts&, Trace*, std::int64_t);

}  // namespace gl::systolic
