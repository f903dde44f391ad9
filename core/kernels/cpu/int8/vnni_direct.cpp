// INT8 GEMM, the AVX512-VNNI path, third version: int8_vnni_rows' 6 x 64 tile with A read
// in place, straight from the caller's rows, instead of packed.
//
// Why A need not be packed for this tile. Packing puts each row's four K neighbours side
// by side so that one 32-bit broadcast feeds vpdpbusd. In a row-major A whose rows are
// contiguous in K, those four bytes already are side by side: row r's group g is the
// 32-bit word at A + r * lda + 4 g. The packed sliver only saved the micro-kernel from
// following six row pointers, which costs nothing (x86 addresses base + index for free).
// What packing did cost: all of A read from memory and written back before the first
// multiply, on both threads, with nothing to overlap it (int8_vnni_rows spends about 6%
// of N = 2048 there; a build that skipped it tied oneDNN). Read in place, A streams from
// memory into cache once, inside the loop, while the multiplies run, and a block of 60
// rows (120 KiB at K = 2048) stays in L2 for the eight B slivers that reuse it, as the
// packed block did.
//
// What still needs care:
//  - The K tail. When K is not a multiple of 4, the last group of a row would read bytes
//    past the row (the next row's, or past the end of A). The tail of each tile's six rows
//    is copied into a 24-byte zero-padded group and added by one more step of the same
//    micro-kernel; B is packed with zeros past K, so the padding adds nothing.
//  - The M edge. A last tile with fewer than six rows points its missing rows at its last
//    real row: they compute sums nobody writes (the epilogue writes the real rows only),
//    and no byte outside A is read. Such tiles, and K in more than one pass, go through
//    the tile buffer and the epilogue. A full-height tile in one pass goes from the
//    registers straight out: requantized (sum_requantized, any columns, any K), or as
//    INT32 when its columns are all inside C and K is a multiple of 4 (sum_into_c).
//  - The zero point of B. The row sums of A (needed only when zb != 0) were a by-product
//    of packing; here they are summed in a separate parallel pass, only in that case.
//
// B is packed as for int8_vnni_rows (the same [K / 4][64][4] slivers; the same weights
// packed once by pack_int8_weights work for both), but, when the caller has not packed
// it, no longer all up front: each sliver is packed inside the loop by the first thread
// that needs it, right before its first tile. The other thread keeps multiplying
// meanwhile (the two take different column blocks first), so packing overlaps compute,
// and the sliver (128 KiB at K = 2048) is still in the packer's L2 when its tiles read
// it. A thread that needs a sliver the other is packing waits for it (it is a small
// part of the call; blocks sharing a sliver come later in the order).
//
// Two things the compiler needed to be told, which made this path the fastest (it had run
// N = 1024 on one thread 20% slower than int8_vnni_rows, 2648 against 2165 us):
//  - The broadcast of a row's four bytes is a vpbroadcastd from memory (asm in step()).
//    Left to itself, GCC loaded some of the six into a general register and broadcast
//    from there, a register transfer per row and step, and spilled an accumulator.
//  - The prefetch once per 64-byte line is hoisted out of the step: a loop over 16
//    steps, not a test in each.
// And, as int8_vnni_rows does, a full tile of an INT32 result over all of K goes from
// the registers straight into C, its sum started at the zero-point terms (sum_into_c).
// After both: N = 1024 on one thread 2112 us against int8_vnni_rows' 2134, on two 1078
// against 1100 (oneDNN's GEMM 1090).
#include <algorithm>
#include <cstring>

#include "kernels/cpu/int8/pack.hpp"
#include "kernels/cpu/int8/paths.hpp"
#include "kernels/cpu/int8/requant_lanes.hpp"
#include "kernels/cpu/int8/zmm_tile.hpp"
#include "sys/cpu_info.hpp"

#if defined(__x86_64__)
// The AVX-512 intrinsics pass _mm512_undefined_epi32() to the masked builtins, which
// -Wmaybe-uninitialized reports at every use (GCC bug 105593), as in requant.cpp.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#endif

namespace gl::kernels {
namespace {

constexpr std::int64_t kMR = 6, kNR = 64;
constexpr std::int64_t kMC = 60, kNC = 512, kKC = 2048;  // int8_vnni_rows' blocking

bool has_vnni() {
    const auto& f = sys::cpu_info().features;
    return f.avx512f && f.avx512bw && f.avx512_vnni;
}

#if defined(__x86_64__)
// One group of four K values: acc += row[r]'s group @p at (broadcast from where the caller
// keeps it) x the four B vectors at @p b.
__attribute__((target("avx512f,avx512bw,avx512vnni"), always_inline)) inline void step(
    __m512i (&acc)[kMR][kNR / 16], const std::uint8_t* const (&row)[kMR], std::int64_t at, const std::int8_t* b) {
    constexpr int kVectors = kNR / 16;
    __m512i bv[kVectors];  // 64 columns, four K each
#pragma GCC unroll 4
    for (int v = 0; v < kVectors; ++v) bv[v] = _mm512_loadu_si512(b + 64 * v);
#pragma GCC unroll 8
    for (int r = 0; r < kMR; ++r) {
        // vpbroadcastd from memory: through a general register (what GCC makes of a
        // memcpy into an int32 here) it costs a register transfer per row and step.
        __m512i ar;
        asm("vpbroadcastd %1, %0" : "=v"(ar) : "m"(*reinterpret_cast<const std::int32_t*>(row[r] + 4 * at)));
#pragma GCC unroll 4
        for (int v = 0; v < kVectors; ++v) acc[r][v] = _mm512_dpbusd_epi32(acc[r][v], ar, bv[v]);
    }
}

// acc += the sum over the @p groups groups of four K values of row[r][4 g .. 4 g + 3] x
// b's group g. row[r] points at row r's first K value of this pass, in the caller's A; b
// is a packed B sliver at the same K, [groups][64][4].
__attribute__((target("avx512f,avx512bw,avx512vnni"), always_inline)) inline void sum_groups(
    __m512i (&acc)[kMR][kNR / 16], std::int64_t groups, const std::uint8_t* const (&row)[kMR], const std::int8_t* b) {
    // Sixteen groups at a time (one 64-byte line of each row), the prefetch once per line.
    std::int64_t g = 0;
    for (; g + 16 <= groups; g += 16) {
        // Six rows read 4 bytes a step are six slow streams the hardware prefetcher
        // follows late when A comes from memory (the block's first B sliver): ask for
        // each row's line 512 bytes ahead, once per 64-byte line read.
#pragma GCC unroll 8
        for (int r = 0; r < kMR; ++r) _mm_prefetch(reinterpret_cast<const char*>(row[r] + 4 * g + 512), _MM_HINT_T0);
        for (std::int64_t h = g; h < g + 16; ++h, b += 4 * kNR) step(acc, row, h, b);
    }
    for (; g < groups; ++g, b += 4 * kNR) step(acc, row, g, b);
}

// The K tail of six rows as a group of its own: row r's K % 4 last values, at row[r] +
// @p at, copied into @p tail with zeros after them, and tail_row[r] pointing at them, so
// that one more step adds them without reading a byte past the row (B is packed with
// zeros past K, so the padding adds nothing).
inline void pad_tail(const std::uint8_t* const (&row)[kMR], std::int64_t at, std::int64_t count,
                     std::uint8_t (&tail)[kMR * 4], const std::uint8_t* (&tail_row)[kMR]) {
    std::fill(std::begin(tail), std::end(tail), std::uint8_t{0});
    for (int r = 0; r < kMR; ++r) {
        std::memcpy(tail + 4 * r, row[r] + at, static_cast<std::size_t>(count));
        tail_row[r] = tail + 4 * r;
    }
}

// tile (kMR x kNR, row-major) = (accumulate ? tile : 0) + sum_groups.
__attribute__((target("avx512f,avx512bw,avx512vnni"))) void micro_kernel(std::int64_t groups,
                                                                           const std::uint8_t* const (&row)[kMR],
                                                                           const std::int8_t* b, std::int32_t* tile,
                                                                           bool accumulate) {
    __m512i acc[kMR][kNR / 16];
    int8::load_tile(acc, tile, kNR, accumulate);
    sum_groups(acc, groups, row, b);
    int8::store_tile(acc, tile, kNR);
}

// A whole tile's sum over all of K (a multiple of four), compensated for the zero points
// and written straight into C (pack.hpp's DirectTile), as int8_vnni_rows does: the sum
// starts at the compensation terms and leaves the registers once, into C.
template <bool Stream>
__attribute__((target("avx512f,avx512bw,avx512vnni"))) void sum_into_c(std::int64_t groups,
                                                                         const std::uint8_t* const (&row)[kMR],
                                                                         const std::int8_t* b,
                                                                         const int8::DirectTile& out) {
    __m512i acc[kMR][kNR / 16];
    int8::start_at_terms(acc, out.row_terms, out.column_terms);
    sum_groups(acc, groups, row, b);
    int8::store_tile_as<Stream>(acc, out.c, out.ldc);
}

// Where a requantized tile goes, and how: the fused requantization (Int8Requant) of a
// full-height tile, columns jr .. jr + cols - 1 (cols <= 64; the rest of the tile is
// computed and dropped).
struct RequantTile {
    std::uint8_t* out;                          // the tile's first byte of the output
    std::int64_t ldo;                           // row stride of the output
    const std::int32_t* row_terms;              // K za zb - zb * row sum, one per row
    const std::int32_t* column_terms;           // za * column sum - bias, from column jr
    const quant::FixedPointMultiplier* m;       // from column jr (per column) or the one
    std::int32_t zero_point;                    // the output's zero point
    quant::QRange range;                        // the output's range
    std::int64_t cols;                          // columns of the tile inside the output
};

// A tile's whole sum over K, compensated, biased and requantized in registers, written as
// bytes: the fused requantization without the epilogue's round trip through a tile in
// memory and its three calls per row. The sum starts at row term - (za * column sum -
// bias), as sum_into_c's does; a K that is not a multiple of four ends with one step on a
// zero-padded copy of the six rows' last bytes, as tile_pass's does.
template <bool PerColumn>
__attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni"))) void sum_requantized(
    std::int64_t K, const std::uint8_t* const (&row)[kMR], const std::int8_t* b, const RequantTile& out) {
    constexpr int kVectors = kNR / 16;
    __m512i acc[kMR][kVectors];
    int8::start_at_terms(acc, out.row_terms, out.column_terms);
    const std::int64_t whole = K / 4;
    sum_groups(acc, whole, row, b);
    if (K % 4 != 0) {
        alignas(64) std::uint8_t tail[kMR * 4];
        const std::uint8_t* tail_row[kMR];
        pad_tail(row, 4 * whole, K % 4, tail, tail_row);
        step(acc, tail_row, 0, b + whole * 4 * kNR);
    }
    const int8::RequantLanes k = int8::requant_lanes(out.zero_point, out.range);
    const __m512i same_m = int8::broadcast_multiplier(out.m[0]);
#pragma GCC unroll 4
    for (int v = 0; v < kVectors; ++v) {
        const std::int64_t valid = std::clamp<std::int64_t>(out.cols - 16 * v, 0, 16);
        if (valid == 0) break;
        const __mmask16 bytes = static_cast<__mmask16>(valid == 16 ? 0xFFFF : (1u << valid) - 1);
        const __mmask8 low = static_cast<__mmask8>(bytes), high = static_cast<__mmask8>(bytes >> 8);
        const __m512i m_low = PerColumn ? _mm512_maskz_loadu_epi64(low, out.m + 16 * v) : same_m;
        const __m512i m_high = PerColumn ? _mm512_maskz_loadu_epi64(high, out.m + 16 * v + 8) : same_m;
#pragma GCC unroll 8
        for (int r = 0; r < kMR; ++r) {
            const __m512i q_low = int8::requantize_lanes(_mm512_cvtepi32_epi64(_mm512_castsi512_si256(acc[r][v])), m_low, k);
            const __m512i q_high =
                int8::requantize_lanes(_mm512_cvtepi32_epi64(_mm512_extracti64x4_epi64(acc[r][v], 1)), m_high, k);
            const __m128i q = _mm_unpacklo_epi64(_mm512_cvtepi64_epi8(q_low), _mm512_cvtepi64_epi8(q_high));
            _mm_mask_storeu_epi8(out.out + r * out.ldo + 16 * v, bytes, q);
        }
    }
}

// The sums of one tile (rows i .. i + rows - 1 of A against the B sliver @p b) over the K
// range [k0, k1) of this pass, added to the tile when @p accumulate. [k0, k1) is cut at
// K4, the end of K's whole groups of four: before it, A is read in place; the tail group
// after it (when K is not a multiple of 4) goes through a zero-padded copy.
void tile_pass(const Int8GemmArgs& g, std::int64_t i, std::int64_t rows, std::int64_t k0, std::int64_t k1,
               const std::int8_t* b, std::int32_t* tile, bool accumulate) {
    const std::int64_t k4 = g.K / 4 * 4;
    const std::uint8_t* row[kMR];
    for (std::int64_t r = 0; r < kMR; ++r) row[r] = g.A + (i + std::min(r, rows - 1)) * g.lda + k0;
    const std::int64_t whole = std::max<std::int64_t>(std::min(k1, k4) - k0, 0) / 4;
    micro_kernel(whole, row, b + k0 * kNR, tile, accumulate);
    if (k1 <= k4 || k4 == g.K) return;  // no tail in this pass
    alignas(64) std::uint8_t tail[kMR * 4];
    const std::uint8_t* tail_row[kMR];
    pad_tail(row, k4 - k0, g.K - k4, tail, tail_row);
    micro_kernel(1, tail_row, b + k4 * kNR, tile, true);
}
#endif

// The loops of pack.hpp's blocked_gemm (blocks of MC x NC taken from a shared counter, K
// in passes of KC, the epilogue on each finished tile), without packing A.
void gemm_int8_vnni_direct(const Int8GemmArgs& g) {
#if defined(__x86_64__)
    if (g.M == 0 || g.N == 0) return;
    const std::int64_t kp = int8::round_up(std::max<std::int64_t>(g.K, 1), 4);
    const int8::Blocking bl{kMR, kNR, 4, 4, kMC, kNC, kKC, false};
    // B: the caller's packed weights (checked), or our own buffer, sized now and packed
    // sliver by sliver in the loop (SliverGate).
    thread_local int8::PackedB own_b;
    int8::PackedB& mine = own_b;  // this (the calling) thread's buffer, named for the workers
    if (!g.packed_b) int8::size_packed_b(g, kNR, kp, mine);
    const int8::PackedB& b = g.packed_b ? int8::packed_b_for(g, bl, kp, mine) : mine;
    int8::SliverGate gate(g.packed_b ? 0 : int8::round_up(g.N, kNR) / kNR);
    thread_local AlignedVector<std::int32_t> row_sum_buffer;
    std::int32_t* const row_sums = g.b_zero_point ? int8::reused_buffer(row_sum_buffer, g.M) : nullptr;
    if (row_sums)
        parallel_for(g.M, 64, [&](std::int64_t first, std::int64_t last) {
            for (std::int64_t i = first; i < last; ++i) row_sums[i] = int8::sum_of(g.A + i * g.lda, 1, g.K);
        });

    const std::int64_t row_blocks = (g.M + kMC - 1) / kMC, col_blocks = (g.N + kNC - 1) / kNC;
    const std::int64_t blocks = row_blocks * col_blocks;
    constexpr std::int64_t kTiles = kMC / kMR;
    std::atomic<std::int64_t> next_block{0};
    const int threads = static_cast<int>(std::min<std::int64_t>(get_num_threads(), blocks));
    const bool one_pass = kp <= kKC;  // then one L1-resident tile serves every tile in turn
    // Full tiles of an INT32 result over all of K in one pass go straight into C
    // (sum_into_c), with za * column sum per column precomputed as each sliver is packed.
    const bool into_c = one_pass && !g.requant && g.K % 4 == 0;
    // Full-height tiles of a requantized result, whatever K and however many columns,
    // are requantized in registers (sum_requantized), with the bias in the column terms.
    const bool requantized = one_pass && g.requant != nullptr;
    thread_local AlignedVector<std::int32_t> column_term_buffer;
    // Padded to whole slivers: a requantized tile loads its 64 columns' terms as four
    // vectors even where fewer are inside C (their results are masked off at the store).
    const std::int64_t padded_n = int8::round_up(g.N, kNR);
    std::int32_t* const column_terms = into_c || requantized ? int8::reused_buffer(column_term_buffer, padded_n) : nullptr;
    if (column_terms) std::fill(column_terms + g.N, column_terms + padded_n, 0);
    const std::int32_t* const bias = requantized ? g.requant->bias : nullptr;
    auto fill_terms = [&](std::int64_t j0, std::int64_t j1) {
        int8::fill_column_terms(g.a_zero_point, b.column_sums.data(), bias, j0, j1, column_terms);
    };
    if (column_terms && g.packed_b) fill_terms(0, g.N);
    const bool stream = into_c && int8::stream_c(g);
    parallel_run(threads, [&](int) {
        thread_local AlignedVector<std::int32_t> tile_buffer;
        std::int32_t* const tiles = int8::reused_buffer(tile_buffer, one_pass ? kMR * kNR : kTiles * kMR * kNC);
        for (std::int64_t t = next_block++; t < blocks; t = next_block++) {
            const std::int64_t i0 = t / col_blocks * kMC, mc = std::min(kMC, g.M - i0);
            const std::int64_t j0 = t % col_blocks * kNC, nc = std::min(kNC, g.N - j0);
            auto tile = [&](std::int64_t ir, std::int64_t jr) {
                return one_pass ? tiles : tiles + (((jr - j0) / kNR) * kTiles + ir / kMR) * kMR * kNR;
            };
            for (std::int64_t pc = 0; pc < kp; pc += kKC) {
                const std::int64_t pass_end = std::min(pc + kKC, kp);
                for (std::int64_t jr = j0; jr < j0 + nc; jr += kNR) {
                    if (pc == 0 && !g.packed_b)
                        gate.ensure(jr / kNR, [&](std::int64_t s) {
                            int8::pack_b_sliver(g, s, mine);
                            if (column_terms) fill_terms(s * kNR, std::min(g.N, (s + 1) * kNR));
                        });
                    for (std::int64_t ir = 0; ir < mc; ir += kMR) {
                        const std::int64_t rows = std::min(kMR, mc - ir);
                        // A full-height tile's rows of A, where the caller keeps them, and
                        // their zero-point terms.
                        const std::uint8_t* row[kMR];
                        std::int32_t row_terms[kMR];
                        auto full_height_rows = [&] {
                            for (std::int64_t r = 0; r < kMR; ++r) {
                                row[r] = g.A + (i0 + ir + r) * g.lda;
                                row_terms[r] = int8::row_term(g, row_sums ? row_sums + i0 + ir + r : nullptr);
                            }
                        };
                        if (requantized && rows == kMR) {
                            const Int8Requant& rq = *g.requant;
                            full_height_rows();
                            const RequantTile out{rq.out + (i0 + ir) * rq.ldo + jr, rq.ldo, row_terms, column_terms + jr,
                                                  rq.multipliers + (rq.per_column ? jr : 0), rq.zero_point, rq.range,
                                                  std::min(kNR, j0 + nc - jr)};
                            if (rq.per_column) sum_requantized<true>(g.K, row, b.data.data() + jr * kp, out);
                            else sum_requantized<false>(g.K, row, b.data.data() + jr * kp, out);
                            continue;
                        }
                        if (into_c && rows == kMR && jr + kNR <= j0 + nc) {
                            full_height_rows();
                            const int8::DirectTile out{g.C + (i0 + ir) * g.ldc + jr, g.ldc, column_terms + jr, row_terms, stream};
                            if (stream) sum_into_c<true>(g.K / 4, row, b.data.data() + jr * kp, out);
                            else sum_into_c<false>(g.K / 4, row, b.data.data() + jr * kp, out);
                            continue;
                        }
                        tile_pass(g, i0 + ir, rows, pc, pass_end, b.data.data() + jr * kp, tile(ir, jr), pc > 0);
                        if (pass_end == kp)
                            int8::epilogue(g, tile(ir, jr), kNR, 1, i0 + ir, jr, rows, std::min(kNR, j0 + nc - jr),
                                           row_sums ? row_sums + i0 + ir : nullptr, b.column_sums.data());
                    }
                }
            }
        }
        // Streaming stores are weakly ordered: fence them before this thread reports done,
        // so that whoever reads C after the join sees them.
        if (stream) _mm_sfence();
    });
#else
    (void)g;
    throw Error("int8_vnni_direct: this build is not for x86-64");
#endif
}

}  // namespace

Int8GemmKernel gemm_int8_vnni_direct_kernel() {
    return {"int8_vnni_direct",
            "int8_vnni_rows' 6x64 tile with A broadcast in place from the caller's rows (no A packing; K tail padded)",
            "avx512_vnni", &has_vnni, &gemm_int8_vnni_direct, false, kNR, 4};
}

}  // namespace gl::kernels
