// MEM-1's log-softmax reading, A/B in one process: the library's kernel (new) against a copy with
// the output prefetch (old), each beside a STREAM triad and the twin, 256 MiB arrays, 2 threads.
#include <immintrin.h>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>
#include "hw/probes.hpp"
#include "kernels/cpu/elementwise.hpp"
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
template <bool SCALEF, bool OUT> T512 void var_range(const float* __restrict x, float* __restrict y, long rows, long cols) {
    for (long r = 0; r < rows; ++r) {
        const float* in = x + r * cols; float* out = y + r * cols;
        const long body = cols / 16 * 16;
        Floats16 run; for (int l = 0; l < 16; ++l) run[l] = in[0];
        for (long c = 0; c < body; c += 16) { Floats16 v; std::memcpy(&v, in + c, 64); run = v > run ? v : run; }
        const float m = std::max(in[0], lanes_max(run));
        Floats16 sums{};
        const bool nxt = r + 2 < rows;
        for (long c = 0; c < body; c += 16) {
            if (nxt) { __builtin_prefetch(in + 2 * cols + c); if (OUT) __builtin_prefetch(out + 2 * cols + c, 1); }
            Floats16 v; std::memcpy(&v, in + c, 64); if (SCALEF) sums += expn(v - m); else sums += expp(v - m);
        }
        const float lt = std::log(lanes_sum(sums));
        for (long c = 0; c < cols; ++c) out[c] = (in[c] - m) - lt;
    }
}
template <bool SCALEF, bool OUT> void var_rows(const float* x, float* y, long rows, long cols) {
    gl::parallel_for(rows, 64, [&](std::int64_t lo, std::int64_t hi) { var_range<SCALEF, OUT>(x + lo * cols, y + lo * cols, hi - lo, cols); });
}
template <class F> double best_moved(F f, long n) {
    double best = 1e30;
    for (int k = 0; k < 3; ++k) { auto t0 = std::chrono::steady_clock::now(); f(); best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()); }
    return n * 12.0 / best * 1e-9;
}
double med(std::vector<double> v) { std::sort(v.begin(), v.end()); return v[v.size() / 2]; }
// One call of f over the arrays, in seconds.
template <class Fn> double once(Fn f) {
    auto t0 = std::chrono::steady_clock::now(); f();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}
int main(int argc, char** argv) {
    gl::set_num_threads(2);
    const int iters = argc > 1 ? std::atoi(argv[1]) : 60;
    const std::int64_t bytes = 256 << 20, n = bytes / 4, cols = 1024;
    std::vector<float> a(n, 0.5f), b(n, 0.5f), c(n, 0.25f), d(n, 0.0f);
    using F = void (*)(const float*, float*, long, long);
    struct V { const char* name; F f; } vs[] = {
        {"portable exp, prefetch in+out (72bebf0)", var_rows<false, true>}, {"portable exp, prefetch in", var_rows<false, false>},
        {"scalef exp, prefetch in+out", var_rows<true, true>}, {"scalef exp, prefetch in", var_rows<true, false>},
        {"library (c51baae)", [](const float* x, float* y, long r, long cc) { gl::kernels::log_softmax_rows(x, y, r, cc); }}};
    const int nv = 5;
    // Same-traffic loop (read 1, write 1: 12 bytes moved an element) and triad (read 2, write 1: 16 moved), in floats.
    // MEM-1's loops (hw::StreamLoop) over the kernel's own arrays: a read, b written; the triad's traffic also reads c... writes b.
    const gl::hw::StreamLoop twin_loop({1, 0, 1}, {a.data(), b.data()}, n, 2);
    const gl::hw::StreamLoop triad_loop({2, 0, 1}, {a.data(), c.data(), b.data()}, n, 2);
    auto twin = [&] { twin_loop.pass_gbs(); };
    auto triad = [&] { triad_loop.pass_gbs(); };
    std::vector<double> of_triad[nv], of_twin[nv], gbs[nv];
    for (int v = 0; v < nv; ++v) vs[v].f(a.data(), b.data(), n / cols, cols);  // warm: pages touched
    twin(); triad();
    for (int it = 0; it < iters; ++it) {
        for (int k = 0; k < nv; ++k) {
            const int w = (it + k) % nv;
            const double t_twin = once(twin), t_triad = once(triad);
            const double t = once([&] { vs[w].f(a.data(), b.data(), n / cols, cols); });
            // Bytes moved: kernel and twin 12 an element, triad 16.
            gbs[w].push_back(12.0 * n / t * 1e-9);
            of_twin[w].push_back(t_twin / t);
            of_triad[w].push_back((12.0 / t) / (16.0 / t_triad));
        }
    }
    for (int w = 0; w < nv; ++w) {
        auto g = gbs[w]; std::sort(g.begin(), g.end());
        std::printf("%-40s median %.0f%% of triad, %.0f%% of twin; GB/s moved: median %.1f, best %.1f\n", vs[w].name,
                    100 * med(of_triad[w]), 100 * med(of_twin[w]), med(gbs[w]), g.back());
    }
}
