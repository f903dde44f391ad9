// Packing for the low-precision GEMM paths (bf16_avx512, fp16_avx512fp16, bf16_amx).
//
// The 16-bit dot-product instructions read K in groups: vdpbf16ps and AMX's tdpbf16ps
// multiply *pairs* of bf16 along K and add both products into one FP32 lane, so B is
// packed with each column's two K neighbours side by side ("VNNI layout"); the FP16 FMA
// kernel uses groups of one. A panel of op(A) is cut into slivers of `width` rows, op(B)
// into slivers of `width` columns; inside a sliver the layout is [k group][row or
// column][position in group]. Everything past the matrix edge is packed as zero, so the
// micro-kernels never test for edges.
#pragma once

#include <algorithm>
#include <cstdint>

#include "kernels/gemm_lowp.hpp"

namespace gl::kernels::lowp {

/// Rounds @p x up to a multiple of @p m.
inline std::int64_t round_up(std::int64_t x, std::int64_t m) { return (x + m - 1) / m * m; }

/// Element (row, col) of op(X).
inline std::uint16_t element(const std::uint16_t* X, std::int64_t ld, bool trans, std::int64_t row, std::int64_t col) {
    return trans ? X[col * ld + row] : X[row * ld + col];
}

/// Packs rows [i0, i0 + mc) and K range [k0, k0 + kc) of op(A) into slivers of
/// @p width rows with K in groups of @p group, K zero-padded to @p k_padded (default:
/// the next multiple of the group). dst holds round_up(mc, width) * that many values.
inline void pack_a(const LowpGemmArgs& g, std::int64_t i0, std::int64_t mc, std::int64_t k0, std::int64_t kc,
                   std::int64_t width, std::int64_t group, std::uint16_t* dst, std::int64_t k_padded = 0) {
    const std::int64_t groups = round_up(std::max(kc, k_padded), group) / group;
    for (std::int64_t s = 0; s < round_up(mc, width); s += width)        // sliver of rows
        for (std::int64_t p = 0; p < groups; ++p)                        // K group
            for (std::int64_t r = 0; r < width; ++r)                     // row in the sliver
                for (std::int64_t e = 0; e < group; ++e) {               // position in the group
                    const std::int64_t row = s + r, k = p * group + e;
                    *dst++ = row < mc && k < kc ? element(g.A, g.lda, g.trans_a, i0 + row, k0 + k) : 0;
                }
}

/// Packs K range [k0, k0 + kc) and columns [j0, j0 + nc) of op(B) into slivers of
/// @p width columns with K in groups of @p group, K zero-padded to @p k_padded
/// (default: the next multiple of the group).
inline void pack_b(const LowpGemmArgs& g, std::int64_t k0, std::int64_t kc, std::int64_t j0, std::int64_t nc,
                   std::int64_t width, std::int64_t group, std::uint16_t* dst, std::int64_t k_padded = 0) {
    const std::int64_t groups = round_up(std::max(kc, k_padded), group) / group;
    for (std::int64_t s = 0; s < round_up(nc, width); s += width)
        for (std::int64_t p = 0; p < groups; ++p)
            for (std::int64_t c = 0; c < width; ++c)
                for (std::int64_t e = 0; e < group; ++e) {
                    const std::int64_t col = s + c, k = p * group + e;
                    *dst++ = col < nc && k < kc ? element(g.B, g.ldb, g.trans_b, k0 + k, j0 + col) : 0;
                }
}

/// Adds an @p rows x @p cols tile (row stride @p ld_tile) into C at (i0, j0).
inline void add_tile(const LowpGemmArgs& g, const float* tile, std::int64_t ld_tile, std::int64_t i0,
                     std::int64_t j0, std::int64_t rows, std::int64_t cols) {
    for (std::int64_t r = 0; r < rows; ++r)
        for (std::int64_t c = 0; c < cols; ++c) g.C[(i0 + r) * g.ldc + j0 + c] += tile[r * ld_tile + c];
}

/// Sets the M x N result to zero (the kernels accumulate K blocks into it).
inline void zero_c(const LowpGemmArgs& g) {
    for (std::int64_t i = 0; i < g.M; ++i)
        for (std::int64_t j = 0; j < g.N; ++j) g.C[i * g.ldc + j] = 0.0f;
}

}  // namespace gl::kernels::lowp
