// Version 6 of the CPU GEMM family: small and skinny problems computed straight from the
// operands, on the calling thread; larger ones go to version 5.
//
// Versions 4 and 5 are built for large matrices: they copy both operands into packed
// slivers and hand stripes of C to threads. For SimpleNet's output layer (64 x 10 x 128:
// 82 thousand multiply-adds, a few microseconds) those fixed costs are the whole cost:
// packing touches every operand element once more, the 12 x 32 AVX-512 micro-tile covers
// N = 10 with 22 wasted columns (computed into a scratch tile and copied out), and a
// thread hand-off costs as much as the arithmetic. The one idea here: let the shape
// decide. Below kSmallWork multiply-adds the problem stays on the calling thread and is
// not packed: a tile of up to 8 rows x 48 columns of C lives in zmm registers; for each
// k it loads the row of op(B) (masked at the right edge, so N = 10 costs one vector, not
// two) and broadcasts one element of op(A) per row, read where it is stored. Only a
// transposed B is copied first (into K x N rows), because a row of op(B) must be
// contiguous to be loaded as vectors; for a small problem that copy is a few kilobytes.
//
// Without AVX-512 the small path is version 4 on one thread (still no hand-off).
#include <immintrin.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <utility>
#include <vector>

#include "kernels/cpu/sgemm/packed.hpp"
#include "kernels/cpu/sgemm/sgemm.hpp"

namespace gl::kernels {
namespace {

// Below this many multiply-adds the arithmetic takes a few microseconds, about what
// packing and a thread hand-off cost: measured on SimpleNet's shapes, the unpacked
// single-thread path wins up to about here (fc2: 82 K; fc1: 6.4 M goes to version 5).
constexpr double kSmallWork = 1 << 20;

constexpr int kMaxRows = 8;     // rows of C per register tile
constexpr int kMaxVectors = 3;  // 16-float vectors per tile row: 8 x 3 = 24 accumulators

// The operands as the tile reads them: op(A)(i, k) = a[i * a_row + k * a_col] (either
// layout, no copy), op(B) as K rows of N contiguous floats.
struct Operands {
    const float* a;
    std::int64_t a_row, a_col;
    const float* b;
    std::int64_t ldb;
    float* c;
    std::int64_t ldc;
    std::int64_t K;
};

// One tile of C: R rows from i0, V vectors (16 columns each, the last masked by
// @p last) from j0, summed over all of K in registers and stored once.
template <int R, int V>
__attribute__((target("avx512f"))) void tile(const Operands& s, std::int64_t i0, std::int64_t j0, __mmask16 last) {
    // Every loop over r and v is unrolled, so each accumulator is a named register: one
    // indexed at run time would have to live in memory, stored back on every k.
    // Locals, not s's fields: a store through C could alias them, and the compiler would
    // then reload them (and spill the accumulators) on every k.
    const std::int64_t a_row = s.a_row, a_col = s.a_col, ldb = s.ldb, K = s.K;
    const float* a = s.a + i0 * a_row;  // op(A)(i0, 0)
    const float* b_row = s.b + j0;      // op(B)(0, j0)
    __m512 acc[R][V];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
        for (int v = 0; v < V; ++v) acc[r][v] = _mm512_setzero_ps();
    for (std::int64_t k = 0; k < K; ++k, a += a_col, b_row += ldb) {
        __m512 b[V];
        for (int v = 0; v + 1 < V; ++v) b[v] = _mm512_loadu_ps(b_row + 16 * v);
        b[V - 1] = _mm512_maskz_loadu_ps(last, b_row + 16 * (V - 1));
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) {
            const __m512 a_rk = _mm512_set1_ps(a[r * a_row]);  // op(A)(i0 + r, k)
            for (int v = 0; v < V; ++v) acc[r][v] = _mm512_fmadd_ps(a_rk, b[v], acc[r][v]);
        }
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
        float* c_row = s.c + (i0 + r) * s.ldc + j0;  // C(i0 + r, j0)
        for (int v = 0; v + 1 < V; ++v) _mm512_storeu_ps(c_row + 16 * v, acc[r][v]);
        _mm512_mask_storeu_ps(c_row + 16 * (V - 1), last, acc[r][V - 1]);
    }
}

// Every tile size the loops need: R = 1..kMaxRows rows (the last row block may be short)
// by V = 1..kMaxVectors vectors (the last column block may be narrow).
using TileFn = void (*)(const Operands&, std::int64_t, std::int64_t, __mmask16);

template <int V, std::size_t... R>
constexpr std::array<TileFn, kMaxRows> tiles_of_width(std::index_sequence<R...>) {
    return {&tile<static_cast<int>(R) + 1, V>...};
}

const std::array<std::array<TileFn, kMaxRows>, kMaxVectors> kTiles = {
    tiles_of_width<1>(std::make_index_sequence<kMaxRows>{}),
    tiles_of_width<2>(std::make_index_sequence<kMaxRows>{}),
    tiles_of_width<3>(std::make_index_sequence<kMaxRows>{})};

void gemm_small_avx512(const GemmArgs<float>& g) {
    // Rows of op(B) must be contiguous: copy a transposed B into K x N rows (16 x 16
    // blocks transposed in registers, as packing does).
    thread_local std::vector<float> b_rows;
    const float* b = g.B;
    std::int64_t ldb = g.ldb;
    if (g.trans_b) {
        b_rows.resize(static_cast<std::size_t>(g.K * g.N));
        packed::transpose_into_sliver(g.B, g.ldb, g.N, g.K, static_cast<int>(g.N), b_rows.data());
        b = b_rows.data();
        ldb = g.N;
    }
    const Operands s{g.A, g.trans_a ? 1 : g.lda, g.trans_a ? g.lda : 1, b, ldb, g.C, g.ldc, g.K};
    constexpr std::int64_t kTileCols = 16 * kMaxVectors;
    for (std::int64_t j0 = 0; j0 < g.N; j0 += kTileCols) {
        const std::int64_t cols = std::min(kTileCols, g.N - j0);
        const std::int64_t vectors = (cols + 15) / 16;
        const std::int64_t last_cols = cols - 16 * (vectors - 1);  // 1..16 columns in the last vector
        const auto last = static_cast<__mmask16>((1u << last_cols) - 1u);
        for (std::int64_t i0 = 0; i0 < g.M; i0 += kMaxRows) {
            const std::int64_t rows = std::min<std::int64_t>(kMaxRows, g.M - i0);
            kTiles[static_cast<std::size_t>(vectors - 1)][static_cast<std::size_t>(rows - 1)](s, i0, j0, last);
        }
    }
}

void gemm_small(const GemmArgs<float>& g) {
    static const SgemmFn threaded = gemm_threaded_kernel().sgemm;
    if (gemm_work(g) > kSmallWork || g.K == 0) return threaded(g);  // version 5 (which zeroes C for K = 0)
    small::gemm_unpacked(g);
}

}  // namespace

namespace small {

void gemm_unpacked(const GemmArgs<float>& g) {
    if (g.M == 0 || g.N == 0) return;
    if (g.K == 0) return packed::gemm_packed_block(g, 0, g.M, 0, g.N);  // an empty sum: zeroes C
    if (packed::active_isa() == packed::Isa::Avx512) return gemm_small_avx512(g);
    packed::gemm_packed_block(g, 0, g.M, 0, g.N);  // no AVX-512: version 4, on this thread
}

}  // namespace small

GemmKernel gemm_small_kernel() {
    return {"small", "shape decides: small/skinny GEMMs unpacked on one thread (masked register tiles), others as 5",
            &gemm_small, nullptr};
}

}  // namespace gl::kernels
