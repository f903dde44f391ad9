// Standalone copies of the row log-softmax for the scratch programs of this folder: the
// portable exp (clamps, integer 2^n) and the AVX-512 one (masked vscalefps), and the kernel
// with and without the output row's prefetch. Built with mk.sh against a gradlab build.
#pragma once
#include <immintrin.h>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>
#include "parallel/thread_pool.hpp"
using Floats16 = float __attribute__((vector_size(64)));
#define T512 __attribute__((target("avx512f")))
__attribute__((always_inline)) inline Floats16 swap_halves(Floats16 v, int half) {
    switch (half) {
        case 8: return __builtin_shufflevector(v, v, 8, 9, 10, 11, 12, 13, 14, 15, 0, 1, 2, 3, 4, 5, 6, 7);
        case 4: return __builtin_shufflevector(v, v, 4, 5, 6, 7, 0, 1, 2, 3, 12, 13, 14, 15, 8, 9, 10, 11);
        case 2: return __builtin_shufflevector(v, v, 2, 3, 0, 1, 6, 7, 4, 5, 10, 11, 8, 9, 14, 15, 12, 13);
        default: return __builtin_shufflevector(v, v, 1, 0, 3, 2, 5, 4, 7, 6, 9, 8, 11, 10, 13, 12, 15, 14);
    }
}
__attribute__((always_inline)) inline float lanes_max(Floats16 v) { for (int h = 8; h >= 1; h /= 2) { Floats16 o = swap_halves(v, h); v = o > v ? o : v; } return v[0]; }
__attribute__((always_inline)) inline float lanes_sum(Floats16 v) { for (int h = 8; h >= 1; h /= 2) v += swap_halves(v, h); return v[0]; }
template <class T> __attribute__((always_inline)) inline T npt(T x) { return (x * 1.44269504f + 12582912.0f) - 12582912.0f; }
template <class T> __attribute__((always_inline)) inline T red(T x, T fn) { return (x - fn * 0.693145752f) - fn * 1.42860677e-6f; }
template <class T> __attribute__((always_inline)) inline T poly(T r) { T p = r * (1.0f / 720) + 1.0f / 120; p = p * r + 1.0f / 24; p = p * r + 1.0f / 6; p = p * r + 0.5f; p = p * r + 1.0f; return p * r + 1.0f; }
T512 __attribute__((always_inline)) inline Floats16 expn(Floats16 t) {
    const Floats16 fn = npt(t);
    const __mmask16 ok = _mm512_cmp_ps_mask(__m512(fn), _mm512_set1_ps(-126.0f), _CMP_NLT_UQ);
    return Floats16(_mm512_maskz_scalef_ps(ok, __m512(poly(red(t, fn))), __m512(fn)));
}

using Ints16 = std::int32_t __attribute__((vector_size(64)));
__attribute__((always_inline)) inline Floats16 expp(Floats16 x) {
    x = x < -88.0f ? Floats16{} - 88.0f : x;
    x = x > 88.0f ? Floats16{} + 88.0f : x;
    const Floats16 fn = npt(x);
    Ints16 n = __builtin_convertvector(fn, Ints16);
    return poly(red(x, fn)) * (Floats16)((n + 127) << 23);
}
// The kernel: SCALEF picks the exp; OUT also prefetches the output row; the input row is
// prefetched D rows ahead (0: not at all), into L1 (H = 0) or L2 only (H = 1).
template <bool SCALEF, bool OUT, int D = 2, int H = 0>
T512 void var_range(const float* __restrict x, float* __restrict y, long rows, long cols) {
    for (long r = 0; r < rows; ++r) {
        const float* in = x + r * cols; float* out = y + r * cols;
        const long body = cols / 16 * 16;
        Floats16 run; for (int l = 0; l < 16; ++l) run[l] = in[0];
        for (long c = 0; c < body; c += 16) { Floats16 v; std::memcpy(&v, in + c, 64); run = v > run ? v : run; }
        const float m = std::max(in[0], lanes_max(run));
        Floats16 sums{};
        const bool nxt = D > 0 && r + D < rows;
        for (long c = 0; c < body; c += 16) {
            if (nxt) {
                __builtin_prefetch(in + D * cols + c, 0, H == 0 ? 3 : 2);
                if (OUT) __builtin_prefetch(out + D * cols + c, 1, H == 0 ? 3 : 2);
            }
            Floats16 v; std::memcpy(&v, in + c, 64); if (SCALEF) sums += expn(v - m); else sums += expp(v - m);
        }
        const float lt = std::log(lanes_sum(sums));
        for (long c = 0; c < cols; ++c) out[c] = (in[c] - m) - lt;
    }
}
template <bool SCALEF, bool OUT> void var_rows(const float* x, float* y, long rows, long cols) {
    gl::parallel_for(rows, 64, [&](std::int64_t lo, std::int64_t hi) { var_range<SCALEF, OUT>(x + lo * cols, y + lo * cols, hi - lo, cols); });
}
double med(std::vector<double> v) { std::sort(v.begin(), v.end()); return v[v.size() / 2]; }
// One call of f, in seconds.
template <class Fn> double once(Fn f) {
    auto t0 = std::chrono::steady_clock::now(); f();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}
