/// @file
/// @brief The output-stationary dataflow: each cell keeps one element of C and adds to it
/// as A flows right and B flows down past it.
///
/// Cell (r, c) owns C(m0 + r, n0 + c). Row r of the array gets A(m0 + r, k) at cycle
/// k + r and column c gets B(k, n0 + c) at cycle k + c (both skewed), so the pair for
/// step k meets in cell (r, c) at cycle k + r + c. After K + R + C - 2 cycles every cell
/// holds its sum; R more cycles shift the results out of the bottom edge, a row per cycle.
#pragma once

#include "systolic/weight_stationary.hpp"

namespace gl::systolic {

/// The registers of one output-stationary cell at the end of a cycle.
template <class T>
struct OsCell {
    Wire<T> a;                  ///< the A value passed right next cycle
    Wire<T> b;                  ///< the B value passed down next cycle
    Wire<Accumulator<T>> acc;   ///< this cell's element of C (real once it has done a multiply-add)
};

/// Which tile of C one output-stationary pass computes: rows m0 .. m0+m_used, columns
/// n0 .. n0+n_used, over all of K.
struct OsPass {
    std::int64_t m0 = 0;      ///< first row of A and C in the tile
    std::int64_t m_used = 0;  ///< array rows holding real outputs (<= R)
    std::int64_t n0 = 0;      ///< first column of B and C in the tile
    std::int64_t n_used = 0;  ///< array columns holding real outputs (<= C)
};

/// One output-stationary tile pass: streams A's rows and B's columns through the grid
/// (K + R + C - 2 cycles), then drains the results into @p C_out (R cycles). Counts its
/// events; records frames into @p trace when given.
template <class T>
void os_tile_pass(const Matrix<T>& A, const Matrix<T>& B, const OsPass& pass, ArrayShape array,
                  Matrix<Accumulator<T>>& C_out, Counts& counts, Trace* trace, std::int64_t pass_index);

}  // namespace gl::systolic
