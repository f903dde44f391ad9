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
#include <atomic>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "base/error.hpp"
#include "kernels/gemm_int8.hpp"
#include "parallel/thread_pool.hpp"
#include "sys/cpu_info.hpp"

#if defined(__x86_64__)
#include <immintrin.h>

#include "kernels/cpu/transpose16.hpp"
#endif

namespace gl::kernels::int8 {

/// Rounds @p x up to a multiple of @p m.
inline std::int64_t round_up(std::int64_t x, std::int64_t m) { return (x + m - 1) / m * m; }

/// op(B)(k, j).
inline std::int8_t b_element(const Int8GemmArgs& g, std::int64_t k, std::int64_t j) {
    return g.trans_b ? g.B[j * g.ldb + k] : g.B[k * g.ldb + j];
}

/// B packed in slivers of `width` columns, K padded to `kp` (a multiple of 4), layout
/// [sliver][kp / 4][width][4]; plus each column's sum over the real K (kernels/gemm_int8.hpp).
using PackedB = Int8PackedB;

/// Copies the @p K values of @p src (stride @p step between them) into @p dst laid out
/// in groups of @p group values, @p stride bytes from one group to the next. A
/// contiguous source with groups of four moves four bytes at a time.
template <class T>
void scatter_groups(const T* src, std::int64_t step, std::int64_t K, std::int64_t group, std::int64_t stride, T* dst) {
    std::int64_t k = 0;
    if (step == 1 && group == 4)  // a fixed-size copy compiles to one 32-bit move, not a call
        for (T* d = dst; k + 4 <= K; k += 4, d += stride) std::memcpy(d, src + k, 4);
    if (step == 1 && group == 64)
        for (T* d = dst; k + 64 <= K; k += 64, d += stride) std::memcpy(d, src + k, 64);
    for (; k < K; ++k) dst[(k / group) * stride + k % group] = src[k * step];
}

#if defined(__x86_64__)
/// The standard 8 x 8 transpose of 32-bit lanes in AVX2 (pairs, then quadruples, then the
/// two 128-bit halves): out[g] gets lane g of row[0..7].
__attribute__((target("avx2"), always_inline)) inline void transpose_lanes_8x8(const __m256i (&row)[8],
                                                                             __m256i (&out)[8]) {
    __m256i pair[8], quad[8];
    for (int r = 0; r < 8; r += 2) {  // rows r, r + 1 interleaved: lanes {0,1 | 4,5} and {2,3 | 6,7}
        pair[r] = _mm256_unpacklo_epi32(row[r], row[r + 1]);
        pair[r + 1] = _mm256_unpackhi_epi32(row[r], row[r + 1]);
    }
    for (int h = 0; h < 8; h += 4)  // rows h..h+3: one lane per 128-bit half, {g | g + 4}
        for (int i = 0; i < 2; ++i) {
            quad[h + 2 * i] = _mm256_unpacklo_epi64(pair[h + i], pair[h + 2 + i]);      // lanes 2i, 2i + 4
            quad[h + 2 * i + 1] = _mm256_unpackhi_epi64(pair[h + i], pair[h + 2 + i]);  // lanes 2i + 1, 2i + 5
        }
    for (int g = 0; g < 4; ++g) {  // rows 0-3 from quad[g], rows 4-7 from quad[4 + g]
        out[g] = _mm256_permute2x128_si256(quad[g], quad[4 + g], 0x20);
        out[g + 4] = _mm256_permute2x128_si256(quad[g], quad[4 + g], 0x31);
    }
}

/// Eight rows of eight 4-byte groups, transposed: group g of row r, at src + r *
/// src_stride + 4 g, goes to dst + g * dst_stride + 4 r. 8 loads, 24 shuffles and 8
/// stores, where copying the 64 groups one by one takes 64 loads and 64 stores.
__attribute__((target("avx2"))) inline void transpose_groups_8x8(const std::uint8_t* src, std::int64_t src_stride,
                                                                 std::uint8_t* dst, std::int64_t dst_stride) {
    __m256i row[8], out[8];
    for (int r = 0; r < 8; ++r) row[r] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + r * src_stride));
    transpose_lanes_8x8(row, out);
    for (int g = 0; g < 8; ++g) _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + g * dst_stride), out[g]);
}

/// transpose_groups_8x8 for @p rows < 8 rows (a sliver of 6 rows of A): the missing rows
/// are read as row 0 and left out of the stores by a mask, which needs AVX-512VL.
__attribute__((target("avx2,avx512f,avx512vl"))) inline void transpose_groups_few_x8(
    const std::uint8_t* src, std::int64_t src_stride, std::int64_t rows, std::uint8_t* dst, std::int64_t dst_stride) {
    __m256i row[8], out[8];
    for (int r = 0; r < 8; ++r)
        row[r] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + (r < rows ? r : 0) * src_stride));
    transpose_lanes_8x8(row, out);
    const __mmask8 present = static_cast<__mmask8>((1u << rows) - 1);
    for (int g = 0; g < 8; ++g) _mm256_mask_storeu_epi32(dst + g * dst_stride, present, out[g]);
}

/// Sixteen rows (at most; @p rows of them present) of sixteen 4-byte groups, transposed
/// in zmm (transpose16.hpp): group g of row r, at src + r * src_stride + 4 g, goes to dst +
/// g * dst_stride + 4 r. 16 loads, 64 shuffles and 16 stores of 64 bytes, where the 8 x 8
/// transposes take 32 loads, 96 shuffles and 32 stores of 32 bytes for the same groups.
__attribute__((target("avx512f,avx512bw"))) inline void transpose_groups_16x16(const std::uint8_t* src,
                                                                              std::int64_t src_stride, std::int64_t rows,
                                                                              std::uint8_t* dst, std::int64_t dst_stride) {
    __m512 row[16], column[16];
    for (int r = 0; r < 16; ++r)
        row[r] = r < rows ? _mm512_castsi512_ps(_mm512_loadu_si512(src + r * src_stride)) : _mm512_setzero_ps();
    transpose_16x16(row, column);
    const __mmask16 present = static_cast<__mmask16>((1u << rows) - 1);
    for (int g = 0; g < 16; ++g) _mm512_mask_storeu_ps(dst + g * dst_stride, present, column[g]);
}

/// Where each position of interleave_six_rows' output vectors comes from.
struct SixRowPlan {
    std::int32_t group_of[6][16] = {};  ///< [vector j][lane t]: the group position 16 j + t holds
    __mmask16 owned[6][6] = {};         ///< [vector j][row r]: the lanes of vector j row r fills
    constexpr SixRowPlan() {
        for (int j = 0; j < 6; ++j)
            for (int t = 0; t < 16; ++t) {
                const int p = 16 * j + t;  // position in the run: row p % 6, group p / 6
                group_of[j][t] = p / 6;
                owned[j][p % 6] = static_cast<__mmask16>(owned[j][p % 6] | (1u << t));
            }
    }
};

/// Six rows of sixteen 4-byte groups into one contiguous run of 16 x 6 groups (the layout
/// of a 6-row sliver of A: group g of row r at dst + 24 g + 4 r). Output vector j holds
/// the groups 16 j .. 16 j + 15 of that run, and run position p comes from row p % 6,
/// group p / 6: one permute of each row into each output vector, under the mask of the
/// positions that row owns. 36 permutes and 6 full stores for 384 bytes, where the 8 x 8
/// transposes with six rows take 48 shuffles and 16 masked stores of 24 bytes.
__attribute__((target("avx512f"))) inline void interleave_six_rows(const std::uint8_t* src, std::int64_t src_stride,
                                                                   std::uint8_t* dst) {
    static constexpr SixRowPlan plan;
    __m512i row[6];
    for (int r = 0; r < 6; ++r) row[r] = _mm512_loadu_si512(src + r * src_stride);
    for (int j = 0; j < 6; ++j) {
        const __m512i index = _mm512_loadu_si512(plan.group_of[j]);
        __m512i out = _mm512_setzero_si512();
        for (int r = 0; r < 6; ++r) out = _mm512_mask_permutexvar_epi32(out, plan.owned[j][r], index, row[r]);
        _mm512_storeu_si512(dst + 64 * j, out);
    }
}
#endif

/// Packs @p rows (at most 16) contiguous rows of @p K bytes, row r at src + r * @p
/// src_stride, in groups of four: group g of row r goes to dst + g * @p dst_stride + 4 r.
/// That is the VNNI packing of rows of A, and of columns of op(B) stored [N, K]. With
/// AVX-512, the rows go 64 K values at a time through interleave_six_rows (six rows
/// packed side by side: a sliver of A) or transpose_groups_16x16 (more than eight rows: 16
/// columns of a transposed B); otherwise 32 at a time through transpose_groups_8x8 where
/// the CPU has AVX2 (fewer than eight rows through transpose_groups_few_x8, with
/// AVX-512VL); the rest group by group.
template <class T>
void scatter_rows_in_fours(const T* src, std::int64_t src_stride, std::int64_t rows, std::int64_t K,
                           std::int64_t dst_stride, T* dst) {
    std::int64_t k = 0;
#if defined(__x86_64__)
    static const bool avx2 = sys::cpu_info().features.avx2;
    static const bool masked = avx2 && sys::cpu_info().features.avx512f && sys::cpu_info().features.avx512vl;
    static const bool avx512 = sys::cpu_info().features.avx512f && sys::cpu_info().features.avx512bw;
    auto* const from = reinterpret_cast<const std::uint8_t*>(src);
    auto* const to = reinterpret_cast<std::uint8_t*>(dst);
    if (rows == 6 && dst_stride == 24 && avx512)
        for (; k + 64 <= K; k += 64) interleave_six_rows(from + k, src_stride, to + (k / 4) * dst_stride);
    else if (rows > 8 && avx512)
        for (; k + 64 <= K; k += 64)
            transpose_groups_16x16(from + k, src_stride, rows, to + (k / 4) * dst_stride, dst_stride);
    if (rows > 8) {  // the rest of K, eight rows at a time
        scatter_rows_in_fours(src + k, src_stride, 8, K - k, dst_stride, dst + (k / 4) * dst_stride);
        scatter_rows_in_fours(src + 8 * src_stride + k, src_stride, rows - 8, K - k, dst_stride,
                              dst + (k / 4) * dst_stride + 32);
        return;
    }
    if (rows == 8 && avx2)
        for (; k + 32 <= K; k += 32) transpose_groups_8x8(from + k, src_stride, to + (k / 4) * dst_stride, dst_stride);
    else if (rows > 1 && masked)
        for (; k + 32 <= K; k += 32)
            transpose_groups_few_x8(from + k, src_stride, rows, to + (k / 4) * dst_stride, dst_stride);
#endif
    for (std::int64_t r = 0; r < rows; ++r)
        scatter_groups(src + r * src_stride + k, 1, K - k, 4, dst_stride, dst + (k / 4) * dst_stride + 4 * r);
}

/// The sum of @p K values of @p src, @p step apart.
template <class T>
std::int32_t sum_of(const T* src, std::int64_t step, std::int64_t K) {
    std::int32_t sum = 0;
    for (std::int64_t k = 0; k < K; ++k) sum += src[k * step];
    return sum;
}

/// Sizes @p p for op(B) of @p g in slivers of @p width columns, K padded to @p kp, reusing
/// the memory it already holds; the slivers are left for pack_b_sliver to fill.
inline void size_packed_b(const Int8GemmArgs& g, std::int64_t width, std::int64_t kp, PackedB& p) {
    p.N = g.N;
    p.K = g.K;
    p.width = width;
    p.kp = kp;
    const std::int64_t slivers = round_up(g.N, width) / width;
    p.data.resize(static_cast<std::size_t>(slivers * width * kp));
    p.column_sums.assign(static_cast<std::size_t>(slivers * width), 0);
}

#if defined(__x86_64__)
/// _mm512_shuffle_i32x4(a, b, Imm): 128-bit lanes 0, 1 of the result from a, 2, 3 from b.
/// (Through the masked form with every lane kept: the plain one's unused pass-through
/// operand makes GCC 12 warn of an uninitialised value, GCC bug 105593.)
template <int Imm>
__attribute__((target("avx512f"), always_inline)) inline __m512i shuffle_lanes(__m512i a, __m512i b) {
    return _mm512_mask_shuffle_i32x4(a, static_cast<__mmask16>(0xFFFF), a, b, Imm);
}

/// Four rows of B, 64 columns each (row i holds K index k + i of every column), into VNNI
/// layout: out[v] holds columns 16 v .. 16 v + 15, each as its four K values side by
/// side. Bytes of rows 0 and 1, and of rows 2 and 3, are interleaved, then those pairs
/// as 16-bit units: each 128-bit lane then holds four columns' groups, and a 4 x 4
/// transpose of the lanes puts the columns in order.
__attribute__((target("avx512f,avx512bw"), always_inline)) inline void interleave_four_rows(const __m512i (&row)[4],
                                                                                          __m512i (&out)[4]) {
    const __m512i lo01 = _mm512_unpacklo_epi8(row[0], row[1]), hi01 = _mm512_unpackhi_epi8(row[0], row[1]);
    const __m512i lo23 = _mm512_unpacklo_epi8(row[2], row[3]), hi23 = _mm512_unpackhi_epi8(row[2], row[3]);
    // In lane L: u[0] columns 16L + 0..3, u[1] 4..7, u[2] 8..11, u[3] 12..15.
    const __m512i u0 = _mm512_unpacklo_epi16(lo01, lo23), u1 = _mm512_unpackhi_epi16(lo01, lo23);
    const __m512i u2 = _mm512_unpacklo_epi16(hi01, hi23), u3 = _mm512_unpackhi_epi16(hi01, hi23);
    // out[v] = lane v of u0, u1, u2, u3.
    const __m512i a = shuffle_lanes<0x44>(u0, u1), b = shuffle_lanes<0x44>(u2, u3);  // lanes 0, 1 of each
    const __m512i c = shuffle_lanes<0xEE>(u0, u1), d = shuffle_lanes<0xEE>(u2, u3);  // lanes 2, 3 of each
    out[0] = shuffle_lanes<0x88>(a, b);  // even lanes of a, then of b
    out[1] = shuffle_lanes<0xDD>(a, b);  // odd lanes
    out[2] = shuffle_lanes<0x88>(c, d);
    out[3] = shuffle_lanes<0xDD>(c, d);
}

/// Packs sliver @p s of a B stored K x N (not transposed), in slivers of a multiple of 64
/// columns, four rows of 64 columns at a time through interleave_four_rows, where the
/// scalar loop gathers every byte a row apart. Every byte of the sliver is written once
/// (rows past K and columns past N as zeros), so the sliver needs no clearing first.
__attribute__((target("avx512f,avx512bw"))) inline void pack_b_sliver_rows_avx512(const Int8GemmArgs& g, std::int64_t s,
                                                                                 PackedB& p) {
    const std::int64_t width = p.width, kp = p.kp;
    std::int8_t* const dst = p.data.data() + s * width * kp;
    for (std::int64_t c0 = 0; c0 < width; c0 += 64) {
        const std::int64_t j0 = s * width + c0;  // this block's first column of B
        const std::int64_t columns = std::clamp<std::int64_t>(g.N - j0, 0, 64);
        const __mmask64 present = columns == 64 ? ~__mmask64{0} : (__mmask64{1} << columns) - 1;
        for (std::int64_t k = 0; k < kp; k += 4) {
            __m512i row[4], out[4];
            for (int i = 0; i < 4; ++i)
                row[i] = k + i < g.K ? _mm512_maskz_loadu_epi8(present, g.B + (k + i) * g.ldb + j0) : _mm512_setzero_si512();
            interleave_four_rows(row, out);
            std::int8_t* const group = dst + (k / 4) * width * 4 + c0 * 4;  // group k / 4 of this block's columns
            for (int v = 0; v < 4; ++v) _mm512_storeu_si512(group + 64 * v, out[v]);
        }
    }
}

/// The column sums of a packed sliver of a multiple of 16 columns: a column's four K
/// values sit side by side in one 32-bit lane, so one vpdpbusd with a vector of ones adds
/// their sum into that lane, for 16 columns at once (the scalar loop adds byte by byte).
/// Padding is zero, so summing all kp values gives the sum over the real K.
__attribute__((target("avx512f,avx512bw,avx512vnni"))) inline void column_sums_vnni(const std::int8_t* sliver,
                                                                                  std::int64_t width, std::int64_t kp,
                                                                                  std::int32_t* sums) {
    const __m512i ones = _mm512_set1_epi8(1);
    for (std::int64_t c = 0; c < width; c += 16) {
        __m512i acc = _mm512_setzero_si512();
        for (std::int64_t k = 0; k < kp; k += 4) acc = _mm512_dpbusd_epi32(acc, ones, _mm512_loadu_si512(sliver + k * width + 4 * c));
        _mm512_storeu_si512(sums + c, acc);
    }
}
#endif

/// The columns of sliver @p s of a transposed B (stored N x K, so each column is a
/// contiguous row of B) into the sliver at @p dst, sixteen at a time.
inline void scatter_transposed_columns(const Int8GemmArgs& g, std::int64_t s, std::int64_t width, std::int64_t columns,
                                       std::int8_t* dst) {
    for (std::int64_t c = 0; c < columns; c += 16)
        scatter_rows_in_fours(g.B + (s * width + c) * g.ldb, g.ldb, std::min<std::int64_t>(16, columns - c), g.K,
                              width * 4, dst + c * 4);
}

#if defined(__x86_64__)
/// pack_b_sliver for the VNNI paths' slivers (a multiple of 64 columns): a K x N B packed
/// four rows at a time in zmm, every byte written, so nothing is cleared first; a
/// transposed B scattered as elsewhere, cleared first only where it has padding (a
/// partial sliver, or K not a multiple of four); the sums by column_sums_vnni.
inline void pack_b_sliver_vnni(const Int8GemmArgs& g, std::int64_t s, PackedB& p) {
    const std::int64_t width = p.width, kp = p.kp;
    std::int8_t* dst = p.data.data() + s * width * kp;
    const std::int64_t columns = std::min(width, g.N - s * width);
    if (g.trans_b) {
        if (columns != width || g.K != kp) std::fill(dst, dst + width * kp, std::int8_t{0});
        scatter_transposed_columns(g, s, width, columns, dst);
    } else {
        pack_b_sliver_rows_avx512(g, s, p);
    }
    column_sums_vnni(dst, width, kp, p.column_sums.data() + s * width);
}
#endif

/// Packs sliver @p s of op(B) (columns s * width ...) into @p p, sized by size_packed_b,
/// with its columns' sums. The sliver is zeroed (the padding) right before its columns are
/// scattered into it, so no page of it is written twice from memory. Slivers of the VNNI
/// paths go through pack_b_sliver_vnni where the CPU has VNNI.
inline void pack_b_sliver(const Int8GemmArgs& g, std::int64_t s, PackedB& p) {
#if defined(__x86_64__)
    static const bool vnni = sys::cpu_info().features.avx512bw && sys::cpu_info().features.avx512_vnni;
    if (vnni && p.width % 64 == 0) return pack_b_sliver_vnni(g, s, p);
#endif
    const std::int64_t width = p.width, kp = p.kp;
    std::int8_t* dst = p.data.data() + s * width * kp;
    std::fill(dst, dst + width * kp, std::int8_t{0});
    const std::int64_t columns = std::min(width, g.N - s * width);
    for (std::int64_t c = 0; c < columns; ++c) {  // column j into [group][column][4]
        const std::int64_t j = s * width + c;
        const std::int8_t* col = g.trans_b ? g.B + j * g.ldb : g.B + j;
        const std::int64_t step = g.trans_b ? 1 : g.ldb;
        if (!g.trans_b) scatter_groups(col, step, g.K, 4, width * 4, dst + c * 4);
        p.column_sums[j] = sum_of(col, step, g.K);
    }
    if (g.trans_b) scatter_transposed_columns(g, s, width, columns, dst);
}

/// Packs all of op(B) into @p p (slivers in parallel: they are independent), reusing
/// the memory @p p already holds.
inline void pack_b_into(const Int8GemmArgs& g, std::int64_t width, std::int64_t kp, PackedB& p) {
    size_packed_b(g, width, kp, p);
    parallel_for(round_up(g.N, width) / width, 1, [&](std::int64_t first, std::int64_t last) {
        for (std::int64_t s = first; s < last; ++s) pack_b_sliver(g, s, p);
    });
}

/// Packs all of op(B) into a new PackedB (pack_b_into).
inline PackedB pack_b(const Int8GemmArgs& g, std::int64_t width, std::int64_t kp) {
    PackedB p;
    pack_b_into(g, width, kp, p);
    return p;
}

/// Packs rows [i0, i0 + mc) of A into slivers of @p width rows, layout
/// [sliver][kp / group][width][group], zero beyond the edges; @p row_sums (mc entries)
/// gets each row's sum when it is not null.
inline void pack_a(const Int8GemmArgs& g, std::int64_t i0, std::int64_t mc, std::int64_t width, std::int64_t group,
                   std::int64_t kp, std::uint8_t* dst, std::int32_t* row_sums) {
    const std::int64_t padded_rows = round_up(mc, width);
    // Only padding needs clearing: with whole slivers of rows and K a multiple of four
    // (kp = K), the scatter below writes every byte.
    if (group != 4 || mc != padded_rows || g.K != kp) std::fill(dst, dst + padded_rows * kp, std::uint8_t{0});
    if (group == 4)  // eight rows at a time, never across a sliver's edge
        for (std::int64_t r = 0; r < mc;) {
            const std::int64_t rows = std::min({std::int64_t{8}, mc - r, width - r % width});
            scatter_rows_in_fours(g.A + (i0 + r) * g.lda, g.lda, rows, g.K, width * 4,
                                  dst + (r / width) * width * kp + (r % width) * 4);
            r += rows;
        }
    for (std::int64_t r = 0; r < mc; ++r) {
        const std::uint8_t* src = g.A + (i0 + r) * g.lda;
        std::uint8_t* sliver = dst + (r / width) * width * kp;
        if (group != 4) scatter_groups(src, 1, g.K, group, width * group, sliver + (r % width) * group);
        if (row_sums) row_sums[r] = sum_of(src, 1, g.K);
    }
}

/// Packs all of A, slivers of @p width rows in parallel, into @p dst (round_up(M, width)
/// x kp bytes); @p row_sums (M entries) gets each row's sum when it is not null.
inline void pack_a_all(const Int8GemmArgs& g, std::int64_t width, std::int64_t group, std::int64_t kp,
                       std::uint8_t* dst, std::int32_t* row_sums) {
    const std::int64_t slivers = round_up(g.M, width) / width;
    parallel_for(slivers, 1, [&](std::int64_t first, std::int64_t last) {
        for (std::int64_t s = first; s < last; ++s)
            pack_a(g, s * width, std::min(width, g.M - s * width), width, group, kp, dst + s * width * kp,
                   row_sums ? row_sums + s * width : nullptr);
    });
}

/// out[c] = quant::requantize(acc[c], m[per_column ? c : 0], zero_point, range) for c <
/// @p count: requant.cpp, with an AVX-512 loop where the CPU has it.
void requantize_span(const std::int32_t* acc, const quant::FixedPointMultiplier* m, bool per_column,
                     std::int32_t zero_point, quant::QRange range, std::int64_t count, std::uint8_t* out);

/// out[c] = raw[c * step] - za * column_sums[c] + row_term for c < @p count (wrapping in
/// INT32): the zero-point compensation of one row of raw sums (step 1 for a row-major
/// tile, MR for a column-major one), requant.cpp, with an AVX-512 loop for step 1 where
/// the CPU has it. @p out may be @p raw.
void compensate_span(const std::int32_t* raw, std::int64_t step, const std::int32_t* column_sums, std::int32_t za,
                     std::int32_t row_term, std::int64_t count, std::int32_t* out);

/// The widest micro-tile (columns) the epilogue's row buffer holds.
inline constexpr std::int64_t kMaxTileColumns = 64;
/// The tallest micro-tile (rows) blocked_gemm's direct tiles take.
inline constexpr std::int64_t kMaxTileRows = 16;

/// One row of the fused requantization: the zero-point-compensated sums plus the bias are
/// gathered from the tile into a contiguous row (a loop the compiler vectorises), then
/// requantized by requantize_span. At most kMaxTileColumns columns.
inline void requantize_row(const Int8Requant& rq, const std::int32_t* raw, std::int64_t cs, const std::int32_t* col_sum,
                           std::int32_t za, std::int32_t row_term, std::int64_t j0, std::int64_t cols,
                           std::uint8_t* out_row) {
    std::int32_t acc[kMaxTileColumns];
    compensate_span(raw, cs, col_sum, za, row_term, cols, acc);
    if (rq.bias)
        for (std::int64_t c = 0; c < cols; ++c) acc[c] += rq.bias[j0 + c];
    requantize_span(acc, rq.multipliers + (rq.per_column ? j0 : 0), rq.per_column, rq.zero_point, rq.range, cols, out_row);
}

/// column_terms[j] = za * column_sums[j] - bias[j] for j in [j0, j1) (no bias when @p bias
/// is null), wrapping as the epilogue's arithmetic does: where a direct tile's sum starts
/// (DirectTile), so that the finished sum is compensated (and biased) already.
inline void fill_column_terms(std::int32_t za, const std::int32_t* column_sums, const std::int32_t* bias,
                              std::int64_t j0, std::int64_t j1, std::int32_t* column_terms) {
    for (std::int64_t j = j0; j < j1; ++j)
        column_terms[j] = static_cast<std::int32_t>(static_cast<std::uint32_t>(za) * static_cast<std::uint32_t>(column_sums[j]) -
                                                    static_cast<std::uint32_t>(bias ? bias[j] : 0));
}

/// K za zb - zb * (the row's sum of A): the part of a row's zero-point compensation that
/// is the same in every column (the row sum is only read, and only kept, when zb != 0).
inline std::int32_t row_term(const Int8GemmArgs& g, const std::int32_t* row_sum) {
    const std::int32_t all_zero_points = static_cast<std::int32_t>(g.K) * g.a_zero_point * g.b_zero_point;
    return all_zero_points - (g.b_zero_point != 0 ? g.b_zero_point * *row_sum : 0);
}

/// Writes the valid @p rows x @p cols part of a tile of raw sums at (i0, j0): zero-point
/// compensation, then INT32 out, or bias + requantization to UINT8. Element (r, c) of the
/// tile is tile[r * rs + c * cs]. @p row_sums is indexed from i0 (may be null when zb =
/// 0), @p column_sums globally.
inline void epilogue(const Int8GemmArgs& g, const std::int32_t* tile, std::int64_t rs, std::int64_t cs, std::int64_t i0,
                     std::int64_t j0, std::int64_t rows, std::int64_t cols, const std::int32_t* row_sums,
                     const std::int32_t* column_sums) {
    const std::int32_t za = g.a_zero_point;
    const Int8Requant* rq = g.requant;
    for (std::int64_t r = 0; r < rows; ++r) {
        const std::int64_t i = i0 + r;
        const std::int32_t term = row_term(g, row_sums ? row_sums + r : nullptr);
        const std::int32_t* raw = tile + r * rs;
        const std::int32_t* col_sum = column_sums + j0;
        if (!rq) {  // INT32 out
            compensate_span(raw, cs, col_sum, za, term, cols, g.C + i * g.ldc + j0);
            continue;
        }
        requantize_row(*rq, raw, cs, col_sum, za, term, j0, cols, rq->out + i * rq->ldo + j0);
    }
}

/// The shape of one path's loops. NC is a multiple of NR, KC of k_align.
struct Blocking {
    std::int64_t mr;       ///< rows of the micro-tile
    std::int64_t nr;       ///< columns of the micro-tile
    std::int64_t a_group;  ///< K values of one row of A side by side in the packing
    std::int64_t k_align;  ///< K is padded to a multiple of this
    std::int64_t mc;       ///< rows of A per cache block
    std::int64_t nc;       ///< columns of B per cache block
    std::int64_t kc;       ///< K values per pass
    bool column_major = false;  ///< the micro-kernel stores element (r, c) at tile[c * MR + r]
};

/// op(B) packed for this call's blocking: the caller's (Int8GemmArgs::packed_b), checked
/// against the blocking, or packed now into @p own.
inline const PackedB& packed_b_for(const Int8GemmArgs& g, const Blocking& bl, std::int64_t kp, PackedB& own) {
    if (!g.packed_b) {
        pack_b_into(g, bl.nr, kp, own);
        return own;
    }
    const PackedB& p = *g.packed_b;
    check(p.N == g.N && p.K == g.K && p.width == bl.nr && p.kp == kp,
          "int8 GEMM: the packed weights were packed for another shape or kernel (N " + std::to_string(p.N) + ", K " +
              std::to_string(p.K) + ", width " + std::to_string(p.width) + "); pack them with pack_int8_weights for the "
              "kernel that runs");
    return p;
}

/// A buffer that keeps its memory from one call to the next on the same thread. A GEMM
/// that allocated its packing buffers afresh in every call would have the kernel hand it
/// new pages each time, and touching those for the first time costs more than packing
/// into them (a 4 MB operand at N = 2048: a thousand page faults, about a millisecond in
/// this VM, against 0.3 ms for the packing itself). The buffers are cache-line aligned
/// (AlignedVector): a std::vector of more than 128 KiB starts 16 bytes into a line, and
/// a packed operand read there by 64-byte loads has every load straddle two lines.
template <class T>
T* reused_buffer(AlignedVector<T>& buffer, std::int64_t count) {
    if (static_cast<std::int64_t>(buffer.size()) < count) buffer.resize(static_cast<std::size_t>(count));
    return buffer.data();
}

/// Where a micro-kernel that finishes a tile itself (Int8GemmArgs::requant null, one pass
/// over K, a full tile) writes it: C(r, c) = raw(r, c) - column_terms[c] + row_terms[r],
/// the epilogue's zero-point compensation with za * column sum precomputed per column.
struct DirectTile {
    std::int32_t* c;                    ///< the tile's first element of C
    std::int64_t ldc;                   ///< row stride of C
    const std::int32_t* column_terms;   ///< za * column sum, from the tile's first column
    const std::int32_t* row_terms;      ///< K za zb - zb * row sum, one per row of the tile
    bool stream = false;                ///< write C with streaming stores (stream_c), rows 64-byte aligned
};

/// C at least this large is written with streaming (non-temporal) stores by a direct tile.
/// An ordinary store first reads the line it writes (write-allocate: Lab 04), so C's bytes
/// cross the memory bus twice; a streaming store writes whole lines without reading them.
/// C of 8 MiB and more does not stay in the two cores' L2 anyway: at N = 2048 (16 MiB) our
/// call took 9.17-9.34 ms with streaming stores against 9.35-9.55 ms without, in three
/// alternating rounds of 6 repetitions; at N = 1024 (4 MiB, which the caches keep for
/// whoever reads C next) it made no difference, so it is not used there.
constexpr std::int64_t kStreamCBytes = std::int64_t{8} << 20;

/// Whether a direct tile may write @p g's C with streaming stores: C large enough
/// (kStreamCBytes) and every row of it starting on a cache line, so a tile's row of 64
/// INT32 is four whole lines.
inline bool stream_c(const Int8GemmArgs& g) {
    return g.M * g.N * static_cast<std::int64_t>(sizeof(std::int32_t)) >= kStreamCBytes &&
           reinterpret_cast<std::uintptr_t>(g.C) % 64 == 0 && g.ldc % 16 == 0;
}

/// A micro-kernel that sums kc values of K, from no earlier pass, and writes the finished
/// tile, compensated, into C itself (DirectTile), in place of the epilogue's per-row calls.
using DirectMicro = void (*)(std::int64_t kc, const std::uint8_t* a, const std::int8_t* b, const DirectTile& out);

/// Which B slivers are packed, when B is packed inside a GEMM's loop rather than up
/// front: each sliver is packed once, by the first thread to ask for it; a thread asking
/// while another packs it waits until it is done.
class SliverGate {
public:
    /// A gate for @p slivers slivers, none packed yet.
    explicit SliverGate(std::int64_t slivers)
        : state_(std::make_unique<std::atomic<int>[]>(static_cast<std::size_t>(slivers))) {
        for (std::int64_t s = 0; s < slivers; ++s) state_[s].store(kUnpacked, std::memory_order_relaxed);
    }
    /// Returns once sliver @p s is packed, calling pack(s) if no thread has started it.
    template <class Pack>
    void ensure(std::int64_t s, Pack pack) {
        std::atomic<int>& st = state_[s];
        if (st.load(std::memory_order_acquire) == kPacked) return;
        int expected = kUnpacked;
        if (st.compare_exchange_strong(expected, kPacking, std::memory_order_acq_rel)) {
            pack(s);
            st.store(kPacked, std::memory_order_release);  // what pack(s) wrote, published
            return;
        }
        while (st.load(std::memory_order_acquire) != kPacked) std::this_thread::yield();
    }

private:
    static constexpr int kUnpacked = 0, kPacking = 1, kPacked = 2;
    std::unique_ptr<std::atomic<int>[]> state_;
};

/// The blocked GEMM around @p micro(kc, a, b, tile, accumulate), which adds (or, when
/// accumulate is false, writes) the raw sums of one A sliver x B sliver over kc values of
/// K into the MR x NR INT32 @p tile (row-major, or column-major: Blocking::column_major).
///
/// All of A is packed once per call, up front, by both threads in parallel. Packing A
/// block by block, inside the loop below, would have each thread pack the same rows again
/// whenever the two threads share a row of blocks, which they do all the time (and
/// packing a row of blocks on first use, behind a gate, made the other thread wait for
/// it: 5% slower at N = 1024). B, unless the caller packed it beforehand
/// (Int8GemmArgs::packed_b: a layer's weights, packed when the layer is built), is packed
/// sliver by sliver inside the loop, by the first thread that needs each (SliverGate), as
/// int8_vnni_direct does: the two threads start on different column blocks, so each packs
/// its own slivers while the other multiplies, the sliver is still in the packer's L2 for
/// its first tiles, and the call has one parallel region instead of two (at N = 1024 and
/// 2048, 0-1% faster than packing B up front in blocks of calls alternated in one
/// process: within this host's noise). The packed operands and the tile buffers live in per-thread buffers that are
/// reused from call to call (reused_buffer).
///
/// The result is cut into blocks of MC rows x NC columns. The intra-op threads take
/// blocks from a shared atomic counter, one at a time, rather than a fixed share each:
/// on a machine where another process takes one core for a while, the thread on the
/// other core simply takes more blocks, where a fixed half-and-half split waits for the
/// slow half. Inside a block, K goes in passes of KC so that a B sliver (KC x NR bytes)
/// stays in cache while the A slivers stream past; the block's tiles live in a per-thread
/// buffer until the last pass, and the epilogue (requantization included) runs on each
/// tile as soon as it is finished. With @p direct, a full tile of an INT32 result that
/// one pass over K finishes is compensated and written to C by @p direct instead.
template <class Micro>
void blocked_gemm(const Int8GemmArgs& g, const Blocking& bl, Micro micro, DirectMicro direct = nullptr) {
    if (g.M == 0 || g.N == 0) return;
    check(bl.nr <= kMaxTileColumns, "int8 blocked_gemm: micro-tile wider than requantize_row's row buffer");
    check(!direct || bl.mr <= kMaxTileRows, "int8 blocked_gemm: micro-tile taller than the direct tile's row terms");
    check(bl.mc % bl.mr == 0, "int8 blocked_gemm: MC must be a multiple of MR (blocks start on an A sliver)");
    const std::int64_t kp = round_up(std::max<std::int64_t>(g.K, 1), bl.k_align);
    thread_local PackedB own_b;
    PackedB& mine = own_b;  // the calling thread's buffer, named so the workers use it too
    const bool pack_b_in_loop = !g.packed_b;
    if (pack_b_in_loop) size_packed_b(g, bl.nr, kp, mine);
    const PackedB& b = pack_b_in_loop ? mine : packed_b_for(g, bl, kp, mine);
    SliverGate b_gate(pack_b_in_loop ? round_up(g.N, bl.nr) / bl.nr : 0);
    thread_local AlignedVector<std::uint8_t> a_buffer;
    thread_local AlignedVector<std::int32_t> row_sum_buffer;
    std::uint8_t* const a = reused_buffer(a_buffer, round_up(g.M, bl.mr) * kp);
    std::int32_t* const row_sums = g.b_zero_point ? reused_buffer(row_sum_buffer, g.M) : nullptr;
    pack_a_all(g, bl.mr, bl.a_group, kp, a, row_sums);

    const std::int64_t row_blocks = (g.M + bl.mc - 1) / bl.mc, col_blocks = (g.N + bl.nc - 1) / bl.nc;
    const std::int64_t blocks = row_blocks * col_blocks;
    const std::int64_t mc_tiles = bl.mc / bl.mr;
    std::atomic<std::int64_t> next_block{0};
    const int threads = static_cast<int>(std::min<std::int64_t>(get_num_threads(), blocks));
    // With one pass over K, a tile is finished as soon as it is computed: one tile's
    // buffer, which stays in L1, serves them all.
    const bool one_pass = kp <= bl.kc;
    // The direct kernel's column terms, za * column sum (wrapping like the epilogue).
    const bool use_direct = direct && one_pass && !g.requant && !bl.column_major;
    thread_local AlignedVector<std::int32_t> column_term_buffer;
    std::int32_t* const column_terms = use_direct ? reused_buffer(column_term_buffer, g.N) : nullptr;
    if (use_direct && !pack_b_in_loop) fill_column_terms(g.a_zero_point, b.column_sums.data(), nullptr, 0, g.N, column_terms);
    const bool stream = use_direct && stream_c(g);
    parallel_run(threads, [&](int) {
        thread_local AlignedVector<std::int32_t> tile_buffer;
        std::int32_t* const tiles = reused_buffer(tile_buffer, one_pass ? bl.mr * bl.nr : mc_tiles * bl.mr * bl.nc);
        for (std::int64_t t = next_block++; t < blocks; t = next_block++) {
            const std::int64_t ib = t / col_blocks, jb = t % col_blocks;
            const std::int64_t i0 = ib * bl.mc, mc = std::min(bl.mc, g.M - i0);
            const std::int64_t j0 = jb * bl.nc, nc = std::min(bl.nc, g.N - j0);
            // Tile (ir, jr) of this block, in the per-thread buffer.
            auto tile = [&](std::int64_t ir, std::int64_t jr) {
                return one_pass ? tiles : tiles + (((jr - j0) / bl.nr) * mc_tiles + ir / bl.mr) * bl.mr * bl.nr;
            };
            for (std::int64_t pc = 0; pc < kp; pc += bl.kc) {
                const std::int64_t kc = std::min(bl.kc, kp - pc);
                const bool last_pass = pc + kc == kp;
                for (std::int64_t jr = j0; jr < j0 + nc; jr += bl.nr) {
                    if (pack_b_in_loop && pc == 0)
                        b_gate.ensure(jr / bl.nr, [&](std::int64_t s) {
                            pack_b_sliver(g, s, mine);
                            if (use_direct)
                                fill_column_terms(g.a_zero_point, b.column_sums.data(), nullptr, s * bl.nr,
                                                  std::min(g.N, (s + 1) * bl.nr), column_terms);
                        });
                    for (std::int64_t ir = 0; ir < mc; ir += bl.mr) {
                        // Slivers are K-major, so K range [pc, pc + kc) of each is contiguous.
                        const std::uint8_t* a_sliver = a + (i0 + ir) * kp + pc * bl.mr;
                        const std::int8_t* b_sliver = b.data.data() + jr * kp + pc * bl.nr;
                        if (use_direct && ir + bl.mr <= mc && jr + bl.nr <= j0 + nc) {  // a full tile, into C
                            std::int32_t row_terms[kMaxTileRows];
                            for (std::int64_t r = 0; r < bl.mr; ++r)
                                row_terms[r] = row_term(g, row_sums ? row_sums + i0 + ir + r : nullptr);
                            direct(kc, a_sliver, b_sliver, {g.C + (i0 + ir) * g.ldc + jr, g.ldc, column_terms + jr, row_terms, stream});
                            continue;
                        }
                        micro(kc, a_sliver, b_sliver, tile(ir, jr), pc > 0);
                        if (last_pass)
                            epilogue(g, tile(ir, jr), bl.column_major ? 1 : bl.nr, bl.column_major ? bl.mr : 1,
                                     i0 + ir, jr, std::min(bl.mr, mc - ir), std::min(bl.nr, j0 + nc - jr),
                                     row_sums ? row_sums + i0 + ir : nullptr, b.column_sums.data());
                    }
                }
            }
        }
#if defined(__x86_64__)
        // Streaming stores are weakly ordered: fence them before this thread reports done,
        // so that whoever reads C after the join sees them.
        if (stream) _mm_sfence();
#endif
    });
}

}  // namespace gl::kernels::int8
