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
// it), a row of the sliver per vector on AVX-512 (copy_rows_into_sliver); the other is a
// transpose of each sliver, done in registers on AVX-512 (transpose_into_sliver).
#include <immintrin.h>

#include <algorithm>
#include <cstdint>

#include "base/error.hpp"
#include "kernels/cpu/sgemm/packed.hpp"
#include "kernels/cpu/transpose16.hpp"

namespace gl::kernels::packed {
namespace {

// A block of rows x 16 floats (rows <= 16) transposed in registers (transpose16.hpp):
// column c of the block, rows values, goes to dst + c * dst_ld. Missing rows are zeros and
// are not stored.
__attribute__((target("avx512f"))) void transpose_block_avx512(const float* src, std::int64_t ld, int rows,
                                                                float* dst, std::int64_t dst_ld) {
    __m512 r[16], column[16];
    for (int i = 0; i < 16; ++i) r[i] = i < rows ? _mm512_loadu_ps(src + i * ld) : _mm512_setzero_ps();
    transpose_16x16(r, column);
    const __mmask16 keep = static_cast<__mmask16>((1u << rows) - 1);
    for (int c = 0; c < 16; ++c) _mm512_mask_storeu_ps(dst + c * dst_ld, keep, column[c]);
}

// The first n lanes of a vector (n clamped to 0..16).
__mmask16 first_lanes(std::int64_t n) { return static_cast<__mmask16>((1u << std::clamp<std::int64_t>(n, 0, 16)) - 1); }

// Rows of a sliver (nr <= 32) as up to two vectors: cols values loaded (the lanes past
// them read as zeros), nr stored.
__attribute__((target("avx512f"))) void copy_rows_avx512(const float* src, std::int64_t ld, std::int64_t rows,
                                                          std::int64_t cols, int nr, float* dst) {
    const __mmask16 load_lo = first_lanes(cols), load_hi = first_lanes(cols - 16);
    const __mmask16 store_lo = first_lanes(nr), store_hi = first_lanes(nr - 16);
    for (std::int64_t k = 0; k < rows; ++k, src += ld, dst += nr) {
        _mm512_mask_storeu_ps(dst, store_lo, _mm512_maskz_loadu_ps(load_lo, src));
        if (store_hi) _mm512_mask_storeu_ps(dst + 16, store_hi, _mm512_maskz_loadu_ps(load_hi, src + 16));
    }
}

}  // namespace

void copy_rows_into_sliver(const float* src, std::int64_t ld, std::int64_t rows, std::int64_t cols, int nr,
                           float* dst) {
    if (active_isa() == Isa::Avx512 && nr <= 32) return copy_rows_avx512(src, ld, rows, cols, nr, dst);
    for (std::int64_t k = 0; k < rows; ++k) {
        for (std::int64_t j = 0; j < cols; ++j) dst[k * nr + j] = src[k * ld + j];
        for (std::int64_t j = cols; j < nr; ++j) dst[k * nr + j] = 0.0f;
    }
}

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
    // g.A[k * g.lda + i] when g.trans_a: copy whole runs of memory for the layout at hand
    // (copy_rows_into_sliver, given in packed.hpp, copies them).
    // With A stored M x K a sliver is a small transpose: transpose_into_sliver (given, in
    // packed.hpp) does exactly that; call it or write the loops yourself.
    for (std::int64_t s = 0; s < mc; s += mr, dst += mr * kc) {
        const std::int64_t rows = std::min<std::int64_t>(mr, mc - s);
        if (g.trans_a) {  // A stored K x M: the MR values of one k are contiguous
            copy_rows_into_sliver(g.A + p0 * g.lda + i0 + s, g.lda, kc, rows, mr, dst);
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
    // access would wait for memory; row by row the hardware prefetcher streams it
    // (copy_rows_into_sliver, given in packed.hpp, copies rows of a sliver). With B
    // stored N x K each sliver is a transpose: transpose_into_sliver again.
    if (g.trans_b) {  // B stored N x K: each column of op(B) is a contiguous run along k
        for (std::int64_t s = 0; s < nc; s += nr, dst += nr * kc) {
            const std::int64_t cols = std::min<std::int64_t>(nr, nc - s);
            transpose_into_sliver(g.B + (j0 + s) * g.ldb + p0, g.ldb, cols, kc, nr, dst);
        }
    } else {  // B stored K x N: row k of the panel is contiguous; deal it out to the slivers
        // In bands of 16 rows, sliver by sliver: the band's 16 runs of a row of B stay in
        // L1, and each sliver gets 16 consecutive rows (2 KiB) at a time. Row by row across
        // the whole panel, the writes went to every sliver at once, NC/NR streams 128 KiB
        // apart (the same cache set): pack_b took 4.4% of a 2-thread N = 1024 GEMM, 2.4%
        // in bands (perf).
        constexpr std::int64_t kRows = 16;
        for (std::int64_t k0 = 0; k0 < kc; k0 += kRows) {
            const std::int64_t k1 = std::min(kc, k0 + kRows);
            for (std::int64_t s = 0; s < nc; s += nr) {
                const std::int64_t cols = std::min<std::int64_t>(nr, nc - s);
                // rows k0 .. k1-1 of sliver s / nr
                copy_rows_into_sliver(g.B + (p0 + k0) * g.ldb + j0 + s, g.ldb, k1 - k0, cols, nr, dst + s * kc + k0 * nr);
            }
        }
    }
    // LAB 02 END
}

}  // namespace gl::kernels::packed
