// 5. Implicit GEMM on a padded grid (stride 1). im2col's col matrix has one row per filter
// tap (c, r, s), and with stride 1 that row is just the image shifted by (r, s). So copy
// the image once into a zero-padded buffer xp of Hp x Wp per channel: output (p, q) reads
// tap (c, r, s) at
//
//   xp [c Hp Wp + r dilation Wp + s dilation + p Wp + q],
//
// a fixed offset per tap plus the position's place on the grid, and the GEMM
// Y [K/groups, P Q] = W [K/groups, (C/groups) R S] x (the shifted image) reads its right
// operand in place: no col matrix to write, no packing of it for the GEMM.
//
// Two register tiles, chosen by the number of filters (pack_filters):
//  - more than 16: the position tile, a row of filters per output position: 32 or 64
//    filters (2 or 4 vectors) x 12 or 6 positions, 24 accumulators for the whole sum over
//    taps; per tap, the filters' values are vector loads (the filters packed as a row per
//    tap) and each position's value of xp one broadcast. Vectors run along the filters,
//    so only the real P x Q outputs are computed, and the tile's rows of filters are
//    transposed into the output planes at the end.
//  - 16 or fewer: the run tile, 8 filters x 16, 32 or 48 consecutive grid positions (per
//    tap one load of that run of xp, 8 broadcasts of filter values). A row of a single
//    vector of filters would need a broadcast per FMA; the price here is the Wp - Q grid
//    columns right of each output row, computed and dropped (2 of 30 at 28 x 28).
// On AVX-512 the tiles are written with intrinsics; elsewhere (and in float64, for
// gradcheck) the same loops in plain C++.
//
// A stride of 2 (or more) is the same after one more copy: split the padded image into
// its 2 x 2 phases (even rows and even columns, even rows and odd columns, ...), each a
// plane of half the size; output (p, q) then reads tap (r, s) from phase
// (r dilation mod 2, s dilation mod 2) at (p + r dilation div 2, q + s dilation div 2),
// again a shifted run of a plane.
//
// The backward passes:
//  - the data gradient of a stride-1 convolution is a stride-1 convolution of dy, padded
//    by (R - 1) dilation - pad (negative: cropped), with the filters flipped and their
//    channels and filters swapped, so it runs the forward loop; with a stride, each phase
//    of dx receives from its own taps only (those with r dilation = its row's phase mod
//    the stride), each a stride-1 convolution of dy over those taps;
//  - the weight gradient dW [k, tap] = sum over output positions (p, q) of
//    dy [k, p, q] xp [tap's offset + p Wp + q]: with dy transposed to one row of filters
//    per position, an outer product per position, a vector of 16, 32 or 64 filters times a
//    broadcast value of xp for each of 24, 12 or 6 taps, summed in registers over an image's
//    positions (only the real P x Q, none of the grid's extra columns).
#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "base/aligned_vector.hpp"
#include "base/x86.hpp"
#include "kernels/cpu/conv/conv.hpp"
#include "kernels/cpu/sgemm/packed.hpp"
#include "parallel/thread_pool.hpp"
#include "sys/cpu_info.hpp"

#if GL_X86
// GCC 12's AVX-512 intrinsics initialise their "undefined" pass-through operand from
// itself, which -W(maybe-)uninitialized reports at every use (GCC bug 105593).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

namespace gl::kernels::conv::implicit_gemm {
namespace {

constexpr int kTileAccumulators = 24;  // vector registers of a tile (positions or taps x filter vectors)
constexpr int kFilters = 8;             // filters per run tile (layers of 16 filters or fewer)
constexpr std::int64_t kSlack = 64;     // zeros after the padded planes: a run tile reads up to 47 positions past the outputs
constexpr int kVector = 16;      // floats per AVX-512 register: grid positions per step

std::int64_t round_up(std::int64_t n, std::int64_t to) { return (n + to - 1) / to * to; }

// One convolution on a padded grid: `channels` input planes, each split into sh x sw
// phase planes of hp x wp (zero padding included), to `filters` output planes of P x Q.
// With stride 1 there is one phase: the padded plane itself.
struct Grid {
    std::int64_t channels = 0, hp = 0, wp = 0, filters = 0;
    std::int64_t R = 0, S = 0, dh = 1, dw = 1;  // filter size and dilation
    std::int64_t P = 0, Q = 0;
    std::int64_t sh = 1, sw = 1;  // stride: phases per plane
    std::int64_t plane() const { return hp * wp; }
    std::int64_t taps() const { return channels * R * S; }
    // The planes, (S - 1) dilation past them where the last tap of the last row reaches, and
    // the run tile's overhang.
    std::int64_t padded_size() const { return channels * sh * sw * plane() + (S - 1) * dw + kSlack; }
    // Where tap (c, r, s)'s run starts in xp: the GEMM's right operand, row by row.
    std::vector<std::int64_t> tap_offsets(std::int64_t round_to = 1) const {
        std::vector<std::int64_t> off(static_cast<std::size_t>(round_up(taps(), round_to)), 0);
        for (std::int64_t c = 0; c < channels; ++c)
            for (std::int64_t r = 0; r < R; ++r)
                for (std::int64_t s = 0; s < S; ++s) {
                    const std::int64_t phase = (c * sh + r * dh % sh) * sw + s * dw % sw;
                    off[static_cast<std::size_t>((c * R + r) * S + s)] = phase * plane() + r * dh / sh * wp + s * dw / sw;
                }
        return off;
    }
};

// Copies `channels` planes of h x w from src into dst's planes with src(0, 0) at padded
// position (top, left) (negative: the first rows or columns are cropped), zeros
// elsewhere; with a stride, padded position (i sh + a, j sw + b) goes to (i, j) of phase
// plane (a, b).
template <class T>
void copy_padded(const T* src, std::int64_t channels, std::int64_t h, std::int64_t w, const Grid& gr, std::int64_t top,
                 std::int64_t left, T* dst) {
    std::fill(dst, dst + gr.padded_size(), T(0));
    if (gr.sh == 1 && gr.sw == 1) {  // one phase: whole rows
        const std::int64_t i0 = std::max<std::int64_t>(0, -top), i1 = std::min(h, gr.hp - top);
        const std::int64_t j0 = std::max<std::int64_t>(0, -left), j1 = std::min(w, gr.wp - left);
        if (j1 <= j0) return;
        for (std::int64_t c = 0; c < channels; ++c)
            for (std::int64_t i = i0; i < i1; ++i)
                std::copy(src + (c * h + i) * w + j0, src + (c * h + i) * w + j1, dst + c * gr.plane() + (i + top) * gr.wp + j0 + left);
        return;
    }
    for (std::int64_t c = 0; c < channels; ++c)
        for (std::int64_t a = 0; a < gr.sh; ++a)
            for (std::int64_t b = 0; b < gr.sw; ++b) {
                T* phase = dst + ((c * gr.sh + a) * gr.sw + b) * gr.plane();
                for (std::int64_t i = 0; i < gr.hp; ++i) {
                    const std::int64_t ih = i * gr.sh + a - top;
                    if (ih < 0 || ih >= h) continue;
                    for (std::int64_t j = 0; j < gr.wp; ++j) {
                        const std::int64_t iw = j * gr.sw + b - left;
                        if (iw >= 0 && iw < w) phase[i * gr.wp + j] = src[(c * h + ih) * w + iw];
                    }
                }
            }
}

// Filter vectors per tile (1, 2 or 4: 16, 32 or 64 filters), the fewest that cover the
// filters, and the positions or taps that fill the tile's kTileAccumulators registers.
int filter_vectors(std::int64_t filters) { return filters <= kVector ? 1 : filters <= 2 * kVector ? 2 : 4; }

// The filters as rows: row t holds weight(f, t) of every filter f, ld floats a row (the
// filters padded with zeros to the tile's width): the forward tile's vector operand.
template <class T, class Weight>
AlignedVector<T> pack_filter_rows(std::int64_t filters, std::int64_t taps, std::int64_t ld, Weight&& weight) {
    AlignedVector<T> rows(static_cast<std::size_t>(taps * ld), T(0));
    for (std::int64_t f = 0; f < filters; ++f)
        for (std::int64_t t = 0; t < taps; ++t) rows[static_cast<std::size_t>(t * ld + f)] = weight(f, t);
    return rows;
}

// The filters packed for the run tile: panel f0 / 8 holds, for each tap t, the 8 values
// weight(f0 + i, t) (zeros past the last filter).
template <class T, class Weight>
AlignedVector<T> pack_filter_panels(std::int64_t filters, std::int64_t taps, Weight&& weight) {
    AlignedVector<T> packed(static_cast<std::size_t>(round_up(filters, kFilters) * taps), T(0));
    for (std::int64_t f = 0; f < filters; ++f)
        for (std::int64_t t = 0; t < taps; ++t)
            packed[static_cast<std::size_t>(((f / kFilters) * taps + t) * kFilters + f % kFilters)] = weight(f, t);
    return packed;
}

bool use_avx512() {
    static const bool avx512 = GL_X86 && sys::cpu_info().features.avx512f;
    return avx512;
}

// ---- the run tile (few filters): out[8 x NR] = A panel [taps x 8]^T x shifted runs of xp

template <class T, int NR>
void run_tile_portable(std::int64_t taps, const T* a, const std::int64_t* off, const T* x, T* out, std::int64_t ldo) {
    T acc[kFilters][NR] = {};
    for (std::int64_t t = 0; t < taps; ++t, a += kFilters) {
        const T* b = x + off[t];
        for (int i = 0; i < kFilters; ++i)
            for (int j = 0; j < NR; ++j) acc[i][j] += a[i] * b[j];
    }
    for (int i = 0; i < kFilters; ++i) std::copy(acc[i], acc[i] + NR, out + i * ldo);
}

#if GL_X86
template <int NV>
__attribute__((target("avx512f"))) void run_tile_avx512(std::int64_t taps, const float* a, const std::int64_t* off,
                                                     const float* x, float* out, std::int64_t ldo) {
    __m512 acc[kFilters][NV];
    for (auto& row : acc)
        for (auto& v : row) v = _mm512_setzero_ps();
    for (std::int64_t t = 0; t < taps; ++t, a += kFilters) {
        const float* b = x + off[t];
        __m512 bv[NV];
        for (int v = 0; v < NV; ++v) bv[v] = _mm512_loadu_ps(b + v * kVector);
        for (int i = 0; i < kFilters; ++i) {
            const __m512 ai = _mm512_set1_ps(a[i]);
            for (int v = 0; v < NV; ++v) acc[i][v] = _mm512_fmadd_ps(ai, bv[v], acc[i][v]);
        }
    }
    for (int i = 0; i < kFilters; ++i)
        for (int v = 0; v < NV; ++v) _mm512_storeu_ps(out + i * ldo + v * kVector, acc[i][v]);
}
#endif

template <class T, int NV>
void run_tile(std::int64_t taps, const T* a, const std::int64_t* off, const T* x, T* out, std::int64_t ldo) {
#if GL_X86
    if constexpr (std::is_same_v<T, float>)
        if (use_avx512()) return run_tile_avx512<NV>(taps, a, off, x, out, ldo);
#endif
    run_tile_portable<T, NV * kVector>(taps, a, off, x, out, ldo);
}

// Vectors per tile (1, 2 or 3 of 16 positions): the one that computes the fewest wasted
// positions past the last row, the widest of equals.
int vectors_per_tile(std::int64_t positions) {
    int best = 3;
    for (int nv = 2; nv >= 1; --nv)
        if (round_up(positions, nv * kVector) < round_up(positions, best * kVector)) best = nv;
    return best;
}

// ---- the position tile (more than 16 filters): a row of filters per output position

// out [i, f] (row stride ld) = sum over taps t of xp [off[t] + base[i]] wt [t, f] for
// kTileAccumulators / NV output positions i (base[i]: the position's place on the grid)
// and NV x 16 filters f: per tap, NV vectors of filters times a broadcast value of xp
// for each position, summed in registers over every tap.
template <class T, int NV>
void position_tile_portable(std::int64_t taps, const T* wt, std::int64_t ld, const std::int64_t* off, const T* xp,
                            const std::int64_t* base, T* out) {
    constexpr int TP = kTileAccumulators / NV, F = NV * kVector;
    T acc[TP][F] = {};
    for (std::int64_t t = 0; t < taps; ++t) {
        const T* x = xp + off[t];
        const T* w = wt + t * ld;
        for (int i = 0; i < TP; ++i)
            for (int f = 0; f < F; ++f) acc[i][f] += x[base[i]] * w[f];
    }
    for (int i = 0; i < TP; ++i) std::copy(acc[i], acc[i] + F, out + i * ld);
}

#if GL_X86
template <int NV>
__attribute__((target("avx512f"))) void position_tile_avx512(std::int64_t taps, const float* wt, std::int64_t ld,
                                                              const std::int64_t* off, const float* xp,
                                                              const std::int64_t* base, float* out) {
    constexpr int TP = kTileAccumulators / NV;
    __m512 acc[TP][NV];
    for (auto& row : acc)
        for (auto& v : row) v = _mm512_setzero_ps();
    // A pointer per position, so that each broadcast is one load from (pointer + tap offset)
    // with no address arithmetic of its own.
    const float* at[TP];
    for (int i = 0; i < TP; ++i) at[i] = xp + base[i];
    for (std::int64_t t = 0; t < taps; ++t) {
        const std::int64_t o = off[t];
        __m512 wv[NV];
        for (int v = 0; v < NV; ++v) wv[v] = _mm512_load_ps(wt + t * ld + v * kVector);
        for (int i = 0; i < TP; ++i) {
            const __m512 xv = _mm512_set1_ps(at[i][o]);
            for (int v = 0; v < NV; ++v) acc[i][v] = _mm512_fmadd_ps(xv, wv[v], acc[i][v]);
        }
    }
    for (int i = 0; i < TP; ++i)
        for (int v = 0; v < NV; ++v) _mm512_store_ps(out + i * ld + v * kVector, acc[i][v]);
}
#endif

template <class T, int NV>
void position_tile(std::int64_t taps, const T* wt, std::int64_t ld, const std::int64_t* off, const T* xp,
                   const std::int64_t* base, T* out) {
#if GL_X86
    if constexpr (std::is_same_v<T, float>)
        if (use_avx512()) return position_tile_avx512<NV>(taps, wt, ld, off, xp, base, out);
#endif
    position_tile_portable<T, NV>(taps, wt, ld, off, xp, base, out);
}

// dst [k nr + j] = src [j ld + k] for j < cols and k < kc, and 0 for cols <= j < nr: the
// GEMM's packing transpose (packed::transpose_into_sliver, 16 x 16 blocks in registers)
// for float32, the same loops for float64. It turns rows of filters into planes and back.
template <class T>
void transpose_into(const T* src, std::int64_t ld, std::int64_t cols, std::int64_t kc, std::int64_t nr, T* dst) {
    if constexpr (std::is_same_v<T, float>) {
        packed::transpose_into_sliver(src, ld, cols, kc, static_cast<int>(nr), dst);
    } else {
        for (std::int64_t k = 0; k < kc; ++k)
            for (std::int64_t j = 0; j < nr; ++j) dst[k * nr + j] = j < cols ? src[j * ld + k] : T(0);
    }
}

// Per-thread scratch, reused from call to call.
// Cache-line aligned (base/aligned_vector.hpp): the tiles load and store whole vectors
// of these (the weight gradient's rows of filters, the forward's result rows), and on a
// misaligned buffer every such access would straddle two lines.
template <class T>
struct Scratch {
    // padded: xp; out: the forward tile's rows of filters; grid_dy: dy transposed (the weight
    // gradient) or one phase of dx (a strided data gradient); dw: the weight gradient's sums.
    AlignedVector<T> padded, out, grid_dy, dw;
    static Scratch& get() {
        thread_local Scratch s;
        return s;
    }
};

// convolve_grid with the position tile: y [filters, P, Q] from the filter rows wt
// (pack_filter_rows, ld floats a row), over @p taps taps at offsets @p off (all of the
// grid's, or a phase's subset), plus bias[f] on plane f when @p bias is not null. Only the
// real P x Q positions are computed, a tile of them at a time (the last tile repeats the
// last position and drops the copies), into rows of filters in @p rows, which end as
// planes of y.
template <class T>
void convolve_positions(const Grid& gr, std::int64_t taps, const T* xp, const T* wt, std::int64_t ld, const std::int64_t* off,
                        T* y, AlignedVector<T>& rows, const T* bias) {
    const int nv = filter_vectors(gr.filters);
    const std::int64_t positions = gr.P * gr.Q, tile = kTileAccumulators / nv;
    rows.resize(static_cast<std::size_t>(round_up(positions, tile) * ld));
    std::int64_t base[kTileAccumulators];
    for (std::int64_t j0 = 0; j0 < positions; j0 += tile) {
        for (std::int64_t i = 0; i < tile; ++i) {  // where each position of the tile is on the grid
            const std::int64_t j = std::min(j0 + i, positions - 1);
            base[i] = j / gr.Q * gr.wp + j % gr.Q;
        }
        for (std::int64_t f0 = 0; f0 < ld; f0 += nv * kVector) {
            T* out = rows.data() + j0 * ld + f0;
            if (nv == 2) position_tile<T, 2>(taps, wt + f0, ld, off, xp, base, out);
            else position_tile<T, 4>(taps, wt + f0, ld, off, xp, base, out);  // nv == 1 takes the run tile
        }
    }
    transpose_into(rows.data(), ld, positions, gr.filters, positions, y);  // rows of filters -> planes
    if (bias) add_plane_bias(y, bias, gr.filters, gr.filters, positions);
    count_multiplies(ld * round_up(positions, tile) * taps);
}

// convolve_grid with the run tile: y [filters, P, Q] from 8-filter panels (@p packed),
// @p taps taps at offsets @p off. The tiles go block of grid positions by block, every
// filter panel on one block before the next: the runs of xp a block reads then stay in L1
// while the panels stream past, where panel by panel each panel would read all of xp again
// (measured when the CNN's conv2 data gradient, 64 planes of dy, took this tile: 1.58 ->
// 1.32 ms at batch 64). The price is a
// per-thread result buffer of every filter's grid, not one panel's: 230 KiB for the
// CNN's layers, megabytes for a layer of hundreds of channels on a 56 x 56 grid.
template <class T>
void convolve_runs(const Grid& gr, std::int64_t taps, const T* xp, const T* packed, const std::int64_t* off, T* y,
                   AlignedVector<T>& out, const T* bias) {
    const int nv = vectors_per_tile(gr.P * gr.wp);
    const std::int64_t width = nv * kVector, ldo = round_up(gr.P * gr.wp, width);
    const std::int64_t filters = round_up(gr.filters, kFilters);
    out.resize(static_cast<std::size_t>(filters * ldo));
    for (std::int64_t j = 0; j < ldo; j += width)
        for (std::int64_t f0 = 0; f0 < gr.filters; f0 += kFilters) {
            const T* panel = packed + f0 * taps;
            T* o = out.data() + f0 * ldo + j;
            if (nv == 3) run_tile<T, 3>(taps, panel, off, xp + j, o, ldo);
            if (nv == 2) run_tile<T, 2>(taps, panel, off, xp + j, o, ldo);
            if (nv == 1) run_tile<T, 1>(taps, panel, off, xp + j, o, ldo);
        }
    for (std::int64_t f = 0; f < gr.filters; ++f)  // drop the grid's extra columns, add the bias
        for (std::int64_t p = 0; p < gr.P; ++p) {
            const T* from = out.data() + f * ldo + p * gr.wp;
            T* to = y + (f * gr.P + p) * gr.Q;
            if (bias) std::transform(from, from + gr.Q, to, [b = bias[f]](T v) { return v + b; });
            else std::copy_n(from, gr.Q, to);
        }
    count_multiplies(filters * ldo * taps);
}

// The filters packed for the tile that suits their number: more than 16, the position
// tile's rows of filters; 16 or fewer, the run tile's panels of 8. With a single vector
// of filters the position tile would need a broadcast per FMA (the ResNet's 16-channel
// block1 took 1.22 ms that way against 0.79 ms with the run tile), and with few filters
// the run tile's wasted grid columns cost little by comparison.
template <class T>
struct PackedFilters {
    AlignedVector<T> data;
    std::int64_t ld = 0;  ///< floats per row (the position tile), 0 for panels (the run tile)
};

template <class T, class Weight>
PackedFilters<T> pack_filters(std::int64_t filters, std::int64_t taps, Weight&& weight) {
    if (filter_vectors(filters) == 1) return {pack_filter_panels<T>(filters, taps, weight), 0};
    const std::int64_t ld = round_up(filters, filter_vectors(filters) * kVector);
    return {pack_filter_rows<T>(filters, taps, ld, weight), ld};
}

// y [filters, P, Q] = the convolution of the padded planes xp with the packed filters, over
// @p taps taps at offsets @p off (all of the grid's, or a phase's subset), plus bias[f]
// on plane f when @p bias is not null, by the tile the packing chose.
template <class T>
void convolve_grid(const Grid& gr, std::int64_t taps, const T* xp, const PackedFilters<T>& w, const std::int64_t* off,
                   T* y, AlignedVector<T>& out, const T* bias = nullptr) {
    if (w.ld > 0) convolve_positions(gr, taps, xp, w.data.data(), w.ld, off, y, out, bias);
    else convolve_runs(gr, taps, xp, w.data.data(), off, y, out, bias);
}

// ---- the weight gradient's tile: taps x filters, an outer product per position ------

// The operands of one image for the weight gradient's tiles: dyt [P Q, ld] (position p Q + q
// holds its filters' gradients, from the tile's first filter on), xp the image's padded
// planes on the grid of width wp.
template <class T>
struct GradOperands {
    std::int64_t P, Q, wp, ld;
    const T* dyt;
    const T* xp;
};

// partial [t, f] (row stride d.ld) += sum over the image's positions of
// xp [off[t] + p wp + q] dyt [p Q + q, f], for TAPS taps and NV x 16 filters.
template <class T, int NV>
void grad_tile_portable(const GradOperands<T>& d, const std::int64_t* off, T* partial) {
    constexpr int TAPS = kTileAccumulators / NV, F = NV * kVector;
    T acc[TAPS][F] = {};
    for (std::int64_t p = 0; p < d.P; ++p)
        for (std::int64_t q = 0; q < d.Q; ++q) {
            const T* dy = d.dyt + (p * d.Q + q) * d.ld;
            const T* x = d.xp + p * d.wp + q;
            for (int t = 0; t < TAPS; ++t)
                for (int f = 0; f < F; ++f) acc[t][f] += x[off[t]] * dy[f];
        }
    for (int t = 0; t < TAPS; ++t)
        for (int f = 0; f < F; ++f) partial[t * d.ld + f] += acc[t][f];
}

#if GL_X86
template <int NV>
__attribute__((target("avx512f"))) void grad_tile_avx512(const GradOperands<float>& d, const std::int64_t* off,
                                                          float* partial) {
    constexpr int TAPS = kTileAccumulators / NV;
    __m512 acc[TAPS][NV];
    for (auto& row : acc)
        for (auto& v : row) v = _mm512_setzero_ps();
    for (std::int64_t p = 0; p < d.P; ++p)
        for (std::int64_t q = 0; q < d.Q; ++q) {
            const float* dy = d.dyt + (p * d.Q + q) * d.ld;
            const float* x = d.xp + p * d.wp + q;
            __m512 dv[NV];
            for (int v = 0; v < NV; ++v) dv[v] = _mm512_load_ps(dy + v * kVector);
            for (int t = 0; t < TAPS; ++t) {
                const __m512 xv = _mm512_set1_ps(x[off[t]]);
                for (int v = 0; v < NV; ++v) acc[t][v] = _mm512_fmadd_ps(xv, dv[v], acc[t][v]);
            }
        }
    for (int t = 0; t < TAPS; ++t)
        for (int v = 0; v < NV; ++v) {
            float* out = partial + t * d.ld + v * kVector;
            _mm512_store_ps(out, _mm512_add_ps(_mm512_load_ps(out), acc[t][v]));
        }
}
#endif

template <class T, int NV>
void grad_tile(const GradOperands<T>& d, const std::int64_t* off, T* partial) {
#if GL_X86
    if constexpr (std::is_same_v<T, float>)
        if (use_avx512()) return grad_tile_avx512<NV>(d, off, partial);
#endif
    grad_tile_portable<T, NV>(d, off, partial);
}


// The forward grid of g: the input padded by pad on every side, in stride x stride phases.
Grid forward_grid(const ConvGeometry& g) {
    const auto phase_extent = [](std::int64_t padded, std::int64_t stride) { return (padded + stride - 1) / stride; };
    return {g.group_in(), phase_extent(g.in_h + 2 * g.pad_h, g.stride_h), phase_extent(g.in_w + 2 * g.pad_w, g.stride_w),
            g.group_out(), g.kernel_h, g.kernel_w, g.dilation_h, g.dilation_w, g.out_h(), g.out_w(), g.stride_h, g.stride_w};
}

// The offset of image n's block of the group's channels in a [N, channels, h, w] tensor.
std::int64_t block(std::int64_t n, std::int64_t group, std::int64_t channels, std::int64_t per_group, std::int64_t plane) {
    return (n * channels + group * per_group) * plane;
}


// The data gradient with a stride, phase by phase. Padded input row u = p sh + r dh
// receives from tap r of output row p, so the rows of phase a (u = i sh + a) receive
// only from the taps with r dh mod sh = a, through output row i - r dh div sh: a
// stride-1 convolution of dy, padded above by the largest such shift, over those taps
// (with their filters' channels and filters swapped). Each phase's result is scattered
// to its rows and columns of dx; padding positions are dropped.
template <class T>
void backward_data_strided(const ConvGeometry& g, const T* dy, const T* w, T* dx) {
    const std::int64_t Cg = g.group_in(), Kg = g.group_out(), R = g.kernel_h, S = g.kernel_w, P = g.out_h(), Q = g.out_w();
    const std::int64_t sh = g.stride_h, sw = g.stride_w, H = g.in_h, W = g.in_w;
    const std::int64_t top = (R - 1) * g.dilation_h / sh, left = (S - 1) * g.dilation_w / sw;  // the largest shifts
    const std::int64_t rows = (H + 2 * g.pad_h + sh - 1) / sh, cols = (W + 2 * g.pad_w + sw - 1) / sw;  // a phase's extent
    // dy padded by the shifts: output (i, j) of a phase reads dy[i - shift, j - shift'].
    const Grid gr{Kg, std::max(rows, P) + top + 1, std::max(cols, Q) + left, Cg, R, S, g.dilation_h, g.dilation_w, rows, cols};
    struct Phase {
        std::vector<std::int64_t> off;         // each tap's run in padded dy
        std::vector<PackedFilters<T>> packed;  // per group
    };
    std::vector<Phase> phases(static_cast<std::size_t>(sh * sw));
    for (std::int64_t a = 0; a < sh; ++a)
        for (std::int64_t b = 0; b < sw; ++b) {
            Phase& ph = phases[static_cast<std::size_t>(a * sw + b)];
            std::vector<std::int64_t> k_of, r_of, s_of;  // the phase's taps
            for (std::int64_t k = 0; k < Kg; ++k)
                for (std::int64_t r = 0; r < R; ++r)
                    for (std::int64_t s = 0; s < S; ++s) {
                        if (r * g.dilation_h % sh != a || s * g.dilation_w % sw != b) continue;
                        k_of.push_back(k), r_of.push_back(r), s_of.push_back(s);
                        ph.off.push_back(k * gr.plane() + (top - r * g.dilation_h / sh) * gr.wp + left - s * g.dilation_w / sw);
                    }
            for (std::int64_t group = 0; group < g.groups; ++group)
                ph.packed.push_back(pack_filters<T>(Cg, static_cast<std::int64_t>(ph.off.size()), [&](std::int64_t c, std::int64_t t) {
                    const auto i = static_cast<std::size_t>(t);
                    return w[(((group * Kg + k_of[i]) * Cg + c) * R + r_of[i]) * S + s_of[i]];
                }));
        }
    parallel_for(g.batch * g.groups, 1, [&](std::int64_t begin, std::int64_t end) {
        Scratch<T>& s = Scratch<T>::get();
        s.padded.resize(static_cast<std::size_t>(gr.padded_size()));
        AlignedVector<T>& result = s.grid_dy;  // one phase of dx's block: [Cg, rows, cols]
        result.resize(static_cast<std::size_t>(Cg * rows * cols));
        for (std::int64_t ng = begin; ng < end; ++ng) {
            const std::int64_t n = ng / g.groups, group = ng % g.groups;
            copy_padded(dy + block(n, group, g.out_channels, Kg, P * Q), Kg, P, Q, gr, top, left, s.padded.data());
            T* dx_block = dx + block(n, group, g.in_channels, Cg, H * W);
            for (std::int64_t a = 0; a < sh; ++a)
                for (std::int64_t b = 0; b < sw; ++b) {
                    const Phase& ph = phases[static_cast<std::size_t>(a * sw + b)];
                    convolve_grid(gr, static_cast<std::int64_t>(ph.off.size()), s.padded.data(),
                                  ph.packed[static_cast<std::size_t>(group)], ph.off.data(), result.data(), s.out);
                    for (std::int64_t c = 0; c < Cg; ++c)  // phase position (i, j) is dx[i sh + a - pad, j sw + b - pad]
                        for (std::int64_t i = 0; i < rows; ++i) {
                            const std::int64_t ih = i * sh + a - g.pad_h;
                            if (ih < 0 || ih >= H) continue;
                            for (std::int64_t j = 0; j < cols; ++j) {
                                const std::int64_t iw = j * sw + b - g.pad_w;
                                if (iw >= 0 && iw < W) dx_block[(c * H + ih) * W + iw] = result[static_cast<std::size_t>((c * rows + i) * cols + j)];
                            }
                        }
                }
        }
    });
}

}  // namespace

template <class T>
void forward(const ConvGeometry& g, const T* x, const T* w, T* y, const T* bias) {
    const Grid gr = forward_grid(g);
    const std::int64_t Kg = g.group_out(), taps = gr.taps(), H = g.in_h, W = g.in_w;
    const std::vector<std::int64_t> off = gr.tap_offsets();
    std::vector<PackedFilters<T>> packed;  // per group
    for (std::int64_t group = 0; group < g.groups; ++group)
        packed.push_back(pack_filters<T>(Kg, taps, [&](std::int64_t k, std::int64_t t) { return w[(group * Kg + k) * taps + t]; }));
    // One task per (image, group): each pads its input planes and writes its own output planes.
    parallel_for(g.batch * g.groups, 1, [&](std::int64_t begin, std::int64_t end) {
        Scratch<T>& s = Scratch<T>::get();
        s.padded.resize(static_cast<std::size_t>(gr.padded_size()));
        for (std::int64_t ng = begin; ng < end; ++ng) {
            const std::int64_t n = ng / g.groups, group = ng % g.groups;
            copy_padded(x + block(n, group, g.in_channels, gr.channels, H * W), gr.channels, H, W, gr, g.pad_h, g.pad_w, s.padded.data());
            convolve_grid(gr, taps, s.padded.data(), packed[static_cast<std::size_t>(group)], off.data(),
                          y + block(n, group, g.out_channels, Kg, gr.P * gr.Q), s.out, bias ? bias + group * Kg : nullptr);
        }
    });
}

template <class T>
void backward_data(const ConvGeometry& g, const T* dy, const T* w, T* dx) {
    if (g.stride_h != 1 || g.stride_w != 1) return backward_data_strided(g, dy, w, dx);
    const std::int64_t Cg = g.group_in(), Kg = g.group_out(), R = g.kernel_h, S = g.kernel_w, P = g.out_h(), Q = g.out_w();
    // dy padded by the filter's reach less the forward padding; the output is dx's H x W.
    const std::int64_t top = (R - 1) * g.dilation_h - g.pad_h, left = (S - 1) * g.dilation_w - g.pad_w;
    const Grid gr{Kg, g.in_h + (R - 1) * g.dilation_h, g.in_w + (S - 1) * g.dilation_w, Cg, R, S, g.dilation_h, g.dilation_w, g.in_h, g.in_w};
    const std::vector<std::int64_t> off = gr.tap_offsets();
    std::vector<PackedFilters<T>> packed;  // per group
    for (std::int64_t group = 0; group < g.groups; ++group)  // filter c's tap (k, r, s) is w[k, c, R-1-r, S-1-s]
        packed.push_back(pack_filters<T>(Cg, gr.taps(), [&](std::int64_t c, std::int64_t t) {
            const std::int64_t k = t / (R * S), r = t / S % R, s = t % S;
            return w[(((group * Kg + k) * Cg + c) * R + (R - 1 - r)) * S + (S - 1 - s)];
        }));
    parallel_for(g.batch * g.groups, 1, [&](std::int64_t begin, std::int64_t end) {
        Scratch<T>& s = Scratch<T>::get();
        s.padded.resize(static_cast<std::size_t>(gr.padded_size()));
        for (std::int64_t ng = begin; ng < end; ++ng) {
            const std::int64_t n = ng / g.groups, group = ng % g.groups;
            copy_padded(dy + block(n, group, g.out_channels, Kg, P * Q), Kg, P, Q, gr, top, left, s.padded.data());
            convolve_grid(gr, gr.taps(), s.padded.data(), packed[static_cast<std::size_t>(group)], off.data(),
                          dx + block(n, group, g.in_channels, Cg, g.in_h * g.in_w), s.out);
        }
    });
}

template <class T>
void backward_weight(const ConvGeometry& g, const T* x, const T* dy, T* dw) {
    const Grid gr = forward_grid(g);
    const std::int64_t Kg = g.group_out(), taps = gr.taps(), P = gr.P, Q = gr.Q;
    // Filters per tile: one, two or four vectors (16, 32 or 64 filters, with 24, 12 or 6
    // taps), the fewest that cover the filters (four: 2-3% faster than two on the CNN's
    // conv2, fewer loads per FMA); the filters padded to the tile, the taps too (the extra
    // taps read xp[j] and are dropped).
    const int nv = filter_vectors(Kg);
    const std::int64_t tile_filters = nv * kVector, tile_taps = kTileAccumulators / nv;
    const std::int64_t ld = round_up(Kg, tile_filters);
    const std::vector<std::int64_t> off = gr.tap_offsets(tile_taps);
    const std::int64_t padded_taps = static_cast<std::int64_t>(off.size());
    const int threads = get_num_threads();
    // Every image adds to all of dw: each thread sums its images into its own copy.
    std::vector<std::vector<T>> sums(static_cast<std::size_t>(threads), std::vector<T>(static_cast<std::size_t>(g.weight_size()), T(0)));
    parallel_run(threads, [&](int thread) {
        Scratch<T>& s = Scratch<T>::get();
        T* sum = sums[static_cast<std::size_t>(thread)].data();
        const std::int64_t first = g.batch * thread / threads, last = g.batch * (thread + 1) / threads;
        s.padded.resize(static_cast<std::size_t>(gr.padded_size()));
        s.grid_dy.resize(static_cast<std::size_t>(P * Q * ld));
        for (std::int64_t group = 0; group < g.groups; ++group) {
            s.dw.assign(static_cast<std::size_t>(padded_taps * ld), T(0));  // [tap, filter]: the tiles' layout
            for (std::int64_t n = first; n < last; ++n) {
                copy_padded(x + block(n, group, g.in_channels, gr.channels, g.in_h * g.in_w), gr.channels, g.in_h, g.in_w, gr,
                            g.pad_h, g.pad_w, s.padded.data());
                // dy as a row of filters per position (filters past Kg zero)
                transpose_into(dy + block(n, group, g.out_channels, Kg, P * Q), P * Q, Kg, P * Q, ld, s.grid_dy.data());
                for (std::int64_t f0 = 0; f0 < ld; f0 += tile_filters)
                    for (std::int64_t t0 = 0; t0 < padded_taps; t0 += tile_taps) {
                        const GradOperands<T> d{P, Q, gr.wp, ld, s.grid_dy.data() + f0, s.padded.data()};
                        T* partial = s.dw.data() + t0 * ld + f0;
                        if (nv == 1) grad_tile<T, 1>(d, off.data() + t0, partial);
                        else if (nv == 2) grad_tile<T, 2>(d, off.data() + t0, partial);
                        else grad_tile<T, 4>(d, off.data() + t0, partial);
                    }
                count_multiplies(ld * padded_taps * P * Q);
            }
            for (std::int64_t k = 0; k < Kg; ++k)  // back to dw's layout [filter, tap]
                for (std::int64_t t = 0; t < taps; ++t) sum[(group * Kg + k) * taps + t] += s.dw[static_cast<std::size_t>(t * ld + k)];
        }
    });
    std::fill(dw, dw + g.weight_size(), T(0));
    for (const auto& sum : sums)
        for (std::int64_t i = 0; i < g.weight_size(); ++i) dw[i] += sum[static_cast<std::size_t>(i)];
}

#define GL_CONV_IMPLICIT_INSTANTIATE(T)                                                \
    template void forward<T>(const ConvGeometry&, const T*, const T*, T*, const T*);  \
    template void backward_data<T>(const ConvGeometry&, const T*, const T*, T*);      \
    template void backward_weight<T>(const ConvGeometry&, const T*, const T*, T*);
GL_CONV_IMPLICIT_INSTANTIATE(float)
GL_CONV_IMPLICIT_INSTANTIATE(double)
#undef GL_CONV_IMPLICIT_INSTANTIATE

}  // namespace gl::kernels::conv::implicit_gemm
