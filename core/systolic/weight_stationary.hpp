/// @file
/// @brief The weight-stationary dataflow of TPU v1, piece by piece: one cell's registers
/// and step, the skewed feed of A at the left edge, and one tile pass through the grid.
///
/// Cell (r, c) holds the weight B(k0 + r, n0 + c). Row m of A enters array row r at
/// cycle m + r (the skew), so A(m, k0 + r) reaches cell (r, c) at cycle m + r + c, just
/// as the partial sum of C(m, n0 + c) arrives from the cell above: each cell adds its
/// product to the sum passing down, and the bottom of column c delivers that tile's part
/// of C(m, n0 + c) at cycle m + R - 1 + c. A delay of C - 1 - c cycles on column c (the
/// de-skew) lines a row of C up again.
#pragma once

#include "systolic/systolic.hpp"

namespace gl::systolic {

/// A register between cells: a value and whether it holds one (a bubble does not).
template <class V>
struct Wire {
    V value{};           ///< the value latched
    bool valid = false;  ///< false for a bubble
};

/// The registers of one weight-stationary cell at the end of a cycle.
template <class T>
struct WsCell {
    Wire<T> weight;              ///< the stationary weight (invalid in the padding of a partial tile)
    Wire<T> a;                   ///< the A value latched this cycle, read by the right neighbour next cycle
    Wire<Accumulator<T>> psum;   ///< the partial sum computed this cycle, read by the cell below next cycle
};

/// Which part of the GEMM one weight-stationary pass computes: rows k0 .. k0+k_used of B
/// (one per array row) times columns n0 .. n0+n_used (one per array column); every row of A.
struct WsPass {
    std::int64_t k0 = 0;      ///< first row of B (and column of A) in the tile
    std::int64_t k_used = 0;  ///< array rows holding real weights (<= R)
    std::int64_t n0 = 0;      ///< first column of B and C in the tile
    std::int64_t n_used = 0;  ///< array columns holding real weights (<= C)
};

/// One cell's step: its registers after a cycle in which it received @p a_in from the left
/// and @p psum_in from above. The weight stays; A is passed on; when both A and the weight
/// are real, the sum passed down gains A times the weight, otherwise it passes unchanged.
template <class T>
WsCell<T> ws_cell_step(const WsCell<T>& cell, Wire<T> a_in, Wire<Accumulator<T>> psum_in);

/// What the left edge of array row @p r receives at cycle @p t of @p pass (t = 0 is the
/// first streaming cycle): A(t - r, k0 + r), read from memory (counted in
/// @p counts.a_reads), or a bubble when there is no such element of the tile.
template <class T>
Wire<T> ws_feed(const Matrix<T>& A, const WsPass& pass, std::int64_t r, std::int64_t t, Counts& counts);

/// One weight-stationary tile pass: loads the weights (R cycles), streams every row of A
/// through (M + R + C - 2 cycles) and adds each de-skewed row of results into
/// @p accumulators (M x C, column c for C(m, n0 + c)). Counts its events; records frames
/// into @p trace when given, numbering cycles from @p counts.cycles.
template <class T>
void ws_tile_pass(const Matrix<T>& A, const Matrix<T>& B, const WsPass& pass, ArrayShape array,
                  Matrix<Accumulator<T>>& accumulators, Counts& counts, Trace* trace, std::int64_t pass_index);

}  // namespace gl::systolic
