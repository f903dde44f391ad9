// What the INT8 GEMM paths (portable.cpp, vnni.cpp, amx.cpp) share: packing, the
// epilogue, and the blocked loops around a micro-kernel.
//
// Packing. vpdpbusd multiplies four consecutive u8 of A by four consecutive s8 of B and
// adds the four products into one INT32 lane, so B is packed with each column's four K
// neighbours side by side ("VNNI layout"): a sliver of `width` columns is
// [K / 4][width][4]. A is cut into slivers of `width` rows laid out [K / group][width][group]
// (group 4 for vpdpbusd's broadcast, 64 for an AMX tile row). Past the matrix edges
// everything is packed as 0, so micro-kernels never test for edges, and a zero adds
// nothing to a sum.
//
// Zero points. The hardware multiplies raw bytes; the GEMM wants
// sum_k (a - za)(b - zb) = sum a b - za sum_k b - zb sum_k a + K za zb.
// The column sums of B are computed while packing it, the row sums of A while packing A
// (only when zb != 0: weights are symmetric, zb = 0), and the epilogue subtracts them.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "base/error.hpp"
#include "kernels/gemm_int8.hpp"
#include "parallel/thread_pool.hpp"

namespace gl::kernels::int8 {

/// Rounds @p x up to a multiple of @p m.
inline std::int64_t round_up(std::int64_t x, std::int64_t m) { return (x + m - 1) / m * m; }

/// op(B)(k, j).
inline std::int8_t b_element(const Int8GemmArgs& g, std::int64_t k, std::int64_t j) {
    return g.trans_b ? g.B[j * g.ldb + k] : g.B[k * g.ldb + j];
}

/// B packed in slivers of `width` columns, K padded to `kp` (a multiple of 4), layout
/// [sliver][kp / 4][width][4]; plus each column's sum over the real K.
struct PackedB {
    std::vector<std::int8_t> data;
    std::vector<std::int32_t> column_sums;
};

/// Packs all of op(B) (slivers in parallel: they are independent).
inline PackedB pack_b(const Int8GemmArgs& g, std::int64_t width, std::int64_t kp) {
    PackedB p;
    const std::int64_t slivers = round_up(g.N, width) / width;
    p.data.assign(static_cast<std::size_t>(slivers * width * kp), 0);
    p.column_sums.assign(static_cast<std::size_t>(slivers * width), 0);
    parallel_for(slivers, 1, [&](std::int64_t first, std::int64_t last) {
        for (std::int64_t s = first; s < last; ++s) {
            std::int8_t* dst = p.data.data() + s * width * kp;
            for (std::int64_t c = 0; c < width && s * width + c < g.N; ++c) {
                const std::int64_t j = s * width + c;
                std::int32_t sum = 0;
                for (std::int64_t k = 0; k < g.K; ++k) {
                    const std::int8_t b = b_element(g, k, j);
                    dst[(k / 4) * width * 4 + c * 4 + k % 4] = b;  // [group][column][position]
                    sum += b;
                }
                p.column_sums[j] = sum;
            }
        }
    });
    return p;
}

/// Packs rows [i0, i0 + mc) of A into slivers of @p width rows, layout
/// [sliver][kp / group][width][group], zero beyond the edges; @p row_sums (mc entries)
/// gets each row's sum when it is not null.
inline void pack_a(const Int8GemmArgs& g, std::int64_t i0, std::int64_t mc, std::int64_t width, std::int64_t group,
                   std::int64_t kp, std::uint8_t* dst, std::int32_t* row_sums) {
    const std::int64_t rows = round_up(mc, width);
    std::fill(dst, dst + rows * kp, std::uint8_t{0});
    for (std::int64_t r = 0; r < mc; ++r) {
        const std::uint8_t* src = g.A + (i0 + r) * g.lda;
        std::uint8_t* sliver = dst + (r / width) * width * kp;
        const std::int64_t in_sliver = r % width;
        std::int32_t sum = 0;
        for (std::int64_t k = 0; k < g.K; ++k) {
            sliver[(k / group) * width * group + in_sliver * group + k % group] = src[k];
            sum += src[k];
        }
        if (row_sums) row_sums[r] = sum;
    }
}

/// Writes the valid @p rows x @p cols part of a tile of raw sums (row stride @p ld) at
/// (i0, j0): zero-point compensation, then INT32 out, or bias + requantization to UINT8.
/// @p row_sums is indexed from i0 (may be null when zb = 0), @p column_sums globally.
inline void epilogue(const Int8GemmArgs& g, const std::int32_t* tile, std::int64_t ld, std::int64_t i0,
                     std::int64_t j0, std::int64_t rows, std::int64_t cols, const std::int32_t* row_sums,
                     const std::int32_t* column_sums) {
    const std::int32_t za = g.a_zero_point, zb = g.b_zero_point;
    const std::int32_t both = static_cast<std::int32_t>(g.K) * za * zb;
    const Int8Requant* rq = g.requant;
    for (std::int64_t r = 0; r < rows; ++r) {
        const std::int32_t row_term = zb != 0 ? zb * row_sums[r] : 0;
        for (std::int64_t c = 0; c < cols; ++c) {
            const std::int64_t i = i0 + r, j = j0 + c;
            std::int32_t acc = tile[r * ld + c] - za * column_sums[j] - row_term + both;
            if (!rq) {
                g.C[i * g.ldc + j] = acc;
                continue;
            }
            if (rq->bias) acc += rq->bias[j];
            const quant::FixedPointMultiplier m = rq->multipliers[rq->per_column ? j : 0];
            rq->out[i * rq->ldo + j] = static_cast<std::uint8_t>(quant::requantize(acc, m, rq->zero_point, rq->range));
        }
    }
}

/// The shape of one path's loops: micro-tile MR x NR, A packed in K groups of
/// @ref a_group, K padded to a multiple of @ref k_align, cache blocks MC x NC.
struct Blocking {
    std::int64_t mr, nr, a_group, k_align, mc, nc;
};

/// The blocked GEMM around @p micro(kp, a_sliver, b_sliver, tile), which overwrites the
/// MR x NR INT32 @p tile (row stride NR) with the raw sums of one sliver pair over all of
/// K. B is packed once; blocks of MC rows x NC columns of the result run on the intra-op
/// threads, each packing its rows of A; the whole K is summed in registers, so each tile
/// leaves the micro-kernel finished and the epilogue (requantization included) runs on
/// it at once, while it is in L1.
template <class Micro>
void blocked_gemm(const Int8GemmArgs& g, const Blocking& bl, Micro micro) {
    if (g.M == 0 || g.N == 0) return;
    const std::int64_t kp = round_up(std::max<std::int64_t>(g.K, 1), bl.k_align);
    const PackedB b = pack_b(g, bl.nr, kp);
    const std::int64_t row_blocks = (g.M + bl.mc - 1) / bl.mc, col_blocks = (g.N + bl.nc - 1) / bl.nc;
    parallel_for(row_blocks * col_blocks, 1, [&](std::int64_t first, std::int64_t last) {
        std::vector<std::uint8_t> a(static_cast<std::size_t>(round_up(bl.mc, bl.mr) * kp));
        std::vector<std::int32_t> row_sums(static_cast<std::size_t>(bl.mc));
        std::vector<std::int32_t> tile(static_cast<std::size_t>(bl.mr * bl.nr));
        std::int64_t packed_block = -1;
        for (std::int64_t t = first; t < last; ++t) {
            const std::int64_t ib = t / col_blocks, jb = t % col_blocks;  // row-major over blocks: A reused
            const std::int64_t i0 = ib * bl.mc, mc = std::min(bl.mc, g.M - i0);
            const std::int64_t j0 = jb * bl.nc, nc = std::min(bl.nc, g.N - j0);
            if (ib != packed_block) {
                pack_a(g, i0, mc, bl.mr, bl.a_group, kp, a.data(), g.b_zero_point ? row_sums.data() : nullptr);
                packed_block = ib;
            }
            for (std::int64_t jr = j0; jr < j0 + nc; jr += bl.nr)
                for (std::int64_t ir = 0; ir < mc; ir += bl.mr) {
                    micro(kp, a.data() + ir * kp, b.data.data() + jr * kp, tile.data());
                    epilogue(g, tile.data(), bl.nr, i0 + ir, jr, std::min(bl.mr, mc - ir),
                             std::min(bl.nr, j0 + nc - jr), row_sums.data() + ir, b.column_sums.data());
                }
        }
    });
}

}  // namespace gl::kernels::int8
