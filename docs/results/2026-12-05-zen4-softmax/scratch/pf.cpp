// Log-softmax from memory: prefetch distance and hint, against its twin (y = x + 1), 2 threads, 256 MiB arrays.
#include <immintrin.h>
#include <omp.h>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>
#include <cstdlib>
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
// D = rows ahead (0: none); H = 0 for T0, 1 for T1 (L2); W: prefetch out too
template <int D, int H, bool W> T512 void lsm(const float* __restrict x, float* __restrict y, long rows, long cols) {
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
                if (H == 0) __builtin_prefetch(in + D * cols + c, 0, 3); else __builtin_prefetch(in + D * cols + c, 0, 2);
                if (W) __builtin_prefetch(out + D * cols + c, 1, H == 0 ? 3 : 2);
            }
            Floats16 v; std::memcpy(&v, in + c, 64); sums += expn(v - m);
        }
        const float lt = std::log(lanes_sum(sums));
        for (long c = 0; c < cols; ++c) out[c] = (in[c] - m) - lt;
    }
}
T512 void twin(const float* __restrict x, float* __restrict y, long rows, long cols) {
    for (long i = 0; i < rows * cols; ++i) y[i] = x[i] + 1.0f;
}
using F = void (*)(const float*, float*, long, long);
double gbs_moved(F f, const float* x, float* y, long rows, long cols) {
    double best = 1e30;
    for (int k = 0; k < 3; ++k) {
        auto t0 = std::chrono::steady_clock::now();
#pragma omp parallel num_threads(2)
        { int t = omp_get_thread_num(); long lo = rows * t / 2, hi = rows * (t + 1) / 2; f(x + lo * cols, y + lo * cols, hi - lo, cols); }
        best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    return rows * cols * 12.0 / best * 1e-9;
}
int main() {
    const long cols = 1024, rows = 65536;
    float* x = (float*)std::aligned_alloc(64, rows * cols * 4); float* y = (float*)std::aligned_alloc(64, rows * cols * 4);
#pragma omp parallel for num_threads(2)
    for (long i = 0; i < rows * cols; ++i) { x[i] = (i % 97) * 0.1f; y[i] = 0; }
    struct V { const char* name; F f; } vs[] = {{"twin", twin}, {"none", lsm<0, 0, false>}, {"d1 t0 w", lsm<1, 0, true>},
        {"d2 t0 w", lsm<2, 0, true>}, {"d4 t0 w", lsm<4, 0, true>}, {"d2 t0 -", lsm<2, 0, false>}, {"d2 t1 w", lsm<2, 1, true>}, {"d4 t1 w", lsm<4, 1, true>}, {"d8 t1 w", lsm<8, 1, true>}};
    const int nv = sizeof vs / sizeof vs[0];
    std::vector<std::vector<double>> ratio(nv);
    for (int round = 0; round < 5; ++round) {
        for (int i = 1; i < nv; ++i) {
            double t = gbs_moved(twin, x, y, rows, cols);
            double g = gbs_moved(vs[i].f, x, y, rows, cols);
            ratio[i].push_back(g / t);
            std::printf("%s %.1f (twin %.1f) ", vs[i].name, g, t);
        }
        std::printf("\n");
    }
    for (int i = 1; i < nv; ++i) { auto r = ratio[i]; std::sort(r.begin(), r.end()); std::printf("%s: median %.0f%% of twin\n", vs[i].name, 100 * r[2]); }
}
