// Version 4 of the CPU GEMM family, step a: packing (the Goto/BLIS algorithm's copies).
//
// The micro-kernel (step b) reads an MR-row sliver of A and an NR-column sliver of B, one
// k at a time. Packing copies each block of A and panel of B, once per block, into exactly
// that order: column k of an A sliver is MR consecutive floats, row k of a B sliver NR
// consecutive floats, 64-byte aligned, zero-padded past the matrix edges. Then the inner
// loop reads two contiguous streams whatever the operands' strides or transposes, the
// micro-kernel never tests a bound, and the copy, O(MK + KN) per block, is repaid by the
// O(MNK) arithmetic that reads it (MC or NC times each value).
//
// Each operand has two layouts. The one whose runs along k are already the sliver's is a
// plain copy, in the order the operand is stored (the hardware prefetcher then streams
// it); the other is a transpose of each sliver, done in registers on AVX-512
// (transpose_into_sliver).
#include <immintrin.h>

#include <algorithm>
#include <cstdint>

#include "base/error.hpp"
#include "kernels/cpu/sgemm/packed.hpp"

namespace gl::kernels::packed {
namespace {

// A block of rows x 16 floats (rows <= 16) transposed in registers: column c of the
// block, rows values, goes to dst + c * dst_ld. Missing rows are zeros and are not
// stored. Three rounds of shuffles, each pairing rows at a wider grain:
//   1. unpack floats of rows 2i, 2i+1         lane L: [r0_0 r1_0 r0_1 r1_1] ...
//   2. unpack pairs (as doubles) of rows 4g..  lane L of s[g][e]: rows 4g..4g+3 of column 4L+e
//   3. shuffle 128-bit lanes across groups   one vector per column: all 16 rows
// GCC 12 warns that the unpack intrinsics read an uninitialised vector: their header
// passes _mm512_undefined_ps() as the (unused, all lanes written) merge source.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
__attribute__((target("avx512f"))) void transpose_block_avx512(const float* src, std::int64_t ld, int rows,
                                                                float* dst, std::int64_t dst_ld) {
    __m512 r[16], t[16];
    for (int i = 0; i < 16; ++i) r[i] = i < rows ? _mm512_loadu_ps(src + i * ld) : _mm512_setzero_ps();
    const __mmask16 keep = static_cast<__mmask16>((1u << rows) - 1);
    for (int i = 0; i < 8; ++i) {
        t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    __m512 s[4][4];  // s[g][e]: lane L holds rows 4g..4g+3 of column 4L + e
    for (int g = 0; g < 4; ++g) {
        const __m512d lo = _mm512_castps_pd(t[4 * g]), hi = _mm512_castps_pd(t[4 * g + 1]);
        const __m512d lo2 = _mm512_castps_pd(t[4 * g + 2]), hi2 = _mm512_castps_pd(t[4 * g + 3]);
        s[g][0] = _mm512_castpd_ps(_mm512_unpacklo_pd(lo, lo2));
        s[g][1] = _mm512_castpd_ps(_mm512_unpackhi_pd(lo, lo2));
        s[g][2] = _mm512_castpd_ps(_mm512_unpacklo_pd(hi, hi2));
        s[g][3] = _mm512_castpd_ps(_mm512_unpackhi_pd(hi, hi2));
    }
    for (int e = 0; e < 4; ++e) {
        const __m512 u0 = _mm512_shuffle_f32x4(s[0][e], s[1][e], 0x44);  // lanes A0 A1 B0 B1
        const __m512 u1 = _mm512_shuffle_f32x4(s[0][e], s[1][e], 0xEE);  // lanes A2 A3 B2 B3
        const __m512 u2 = _mm512_shuffle_f32x4(s[2][e], s[3][e], 0x44);  // lanes C0 C1 D0 D1
        const __m512 u3 = _mm512_shuffle_f32x4(s[2][e], s[3][e], 0xEE);  // lanes C2 C3 D2 D3
        _mm512_mask_storeu_ps(dst + (0 + e) * dst_ld, keep, _mm512_shuffle_f32x4(u0, u2, 0x88));   // lane 0 of each
        _mm512_mask_storeu_ps(dst + (4 + e) * dst_ld, keep, _mm512_shuffle_f32x4(u0, u2, 0xDD));   // lane 1
        _mm512_mask_storeu_ps(dst + (8 + e) * dst_ld, keep, _mm512_shuffle_f32x4(u1, u3, 0x88));   // lane 2
        _mm512_mask_storeu_ps(dst + (12 + e) * dst_ld, keep, _mm512_shuffle_f32x4(u1, u3, 0xDD));  // lane 3
    }
}
#pragma GCC diagnostic pop

}  // namespace

void transpose_into_sliver(const float* src, std::int64_t ld, std::int64_t cols, std::int64_t kc, int nr,
                           float* dst) {
    std::int64_t k0 = 0;
    if (cols == nr && active_isa() == Isa::Avx512)  // blocks of 16 k, in registers
        for (; k0 + 16 <= kc; k0 += 16)
            for (int j = 0; j < nr; j += 16)  // at most 16 rows of src per block
                transpose_block_avx512(src + j * ld + k0, ld, std::min(16, nr - j), dst + k0 * nr + j, nr);
    for (std::int64_t j = 0; j < cols; ++j)
        for (std::int64_t k = k0; k < kc; ++k) dst[k * nr + j] = src[j * ld + k];
    for (std::int64_t j = cols; j < nr; ++j)
        for (std::int64_t k = k0; k < kc; ++k) dst[k * nr + j] = 0.0f;
}

void pack_a(const GemmArgs<float>& g, std::int64_t i0, std::int64_t mc, std::int64_t p0,
            std::int64_t kc, int mr, float* dst) {
    // LAB 02 BEGIN: pack a block of A into MR-row slivers
    // Sliver s covers rows i0 + s*MR .. +MR-1; inside it, column k is MR consecutive
    // floats (dst[k * MR + r]), so the micro-kernel reads A strictly sequentially.
    // Rows past the end of the block are zeros. op(A)(i, k) is g.A[i * g.lda + k], or
    // g.A[k * g.lda + i] when g.trans_a: copy whole runs of memory for the layout at hand.
    // With A stored M x K a sliver is a small transpose: transpose_into_sliver (given, in
    // packed.hpp) does exactly that; call it or write the loops yourself.
    for (std::int64_t s = 0; s < mc; s += mr, dst += mr * kc) {
        const std::int64_t rows = std::min<std::int64_t>(mr, mc - s);
        if (g.trans_a) {  // A stored K x M: the MR values of one k are contiguous
            for (std::int64_t k = 0; k < kc; ++k) {
                const float* src = g.A + (p0 + k) * g.lda + i0 + s;
                for (std::int64_t r = 0; r < rows; ++r) dst[k * mr + r] = src[r];
                for (std::int64_t r = rows; r < mr; ++r) dst[k * mr + r] = 0.0f;
            }
        } else {  // A stored M x K: the MR rows of the sliver, transposed
            transpose_into_sliver(g.A + (i0 + s) * g.lda + p0, g.lda, rows, kc, mr, dst);
        }
    }
    // LAB 02 END
}

void pack_b(const GemmArgs<float>& g, std::int64_t p0, std::int64_t kc, std::int64_t j0,
            std::int64_t nc, int nr, float* dst) {
    // LAB 02 BEGIN: pack a panel of B into NR-column slivers
    // Sliver s covers columns j0 + s*NR .. +NR-1; inside it, row k is NR consecutive
    // floats (dst[s * NR * kc + k * NR + j]). Columns past the end are zeros. Read B in
    // the order it is stored: with B stored K x N, walking one sliver down its rows
    // would jump a whole row of B (often several pages) per NR floats, and every
    // access would wait for memory; row by row the hardware prefetcher streams it. With
    // B stored N x K each sliver is a transpose: transpose_into_sliver again.
    if (g.trans_b) {  // B stored N x K: each column of op(B) is a contiguous run along k
        for (std::int64_t s = 0; s < nc; s += nr, dst += nr * kc) {
            const std::int64_t cols = std::min<std::int64_t>(nr, nc - s);
            transpose_into_sliver(g.B + (j0 + s) * g.ldb + p0, g.ldb, cols, kc, nr, dst);
        }
    } else {  // B stored K x N: row k of the panel is contiguous; deal it out to the slivers
        for (std::int64_t k = 0; k < kc; ++k) {
            const float* src = g.B + (p0 + k) * g.ldb + j0;
            for (std::int64_t s = 0; s < nc; s += nr) {
                float* row = dst + s * kc + k * nr;  // sliver s / nr, row k
                const std::int64_t cols = std::min<std::int64_t>(nr, nc - s);
                for (std::int64_t j = 0; j < cols; ++j) row[j] = src[s + j];
                for (std::int64_t j = cols; j < nr; ++j) row[j] = 0.0f;
            }
        }
    }
    // LAB 02 END
}

}  // namespace gl::kernels::packed
