// Scratch: the row log-softmax's exp, today's generic form against AVX-512 forms, rows in L2.
#include <immintrin.h>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>
#include <algorithm>
using Floats16 = float __attribute__((vector_size(64)));
using Ints16 = std::int32_t __attribute__((vector_size(64)));
#define T512 __attribute__((target("avx512f")))
template <class T> __attribute__((always_inline)) inline T exp_inline(T x) {
    using Int = Ints16;
    x = x < -88.0f ? T{} - 88.0f : x;
    x = x > 88.0f ? T{} + 88.0f : x;
    const T fn = (x * 1.44269504f + 12582912.0f) - 12582912.0f;
    Int n = __builtin_convertvector(fn, Ints16);
    const T r = (x - fn * 0.693145752f) - fn * 1.42860677e-6f;
    T p = r * (1.0f / 720) + 1.0f / 120;
    p = p * r + 1.0f / 24; p = p * r + 1.0f / 6; p = p * r + 0.5f; p = p * r + 1.0f; p = p * r + 1.0f;
    return p * std::bit_cast<T>((n + 127) << 23);
}
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

T512 void generic(const float* __restrict x, float* __restrict y, long rows, long cols) {
    constexpr int L = 16;
    for (long r = 0; r < rows; ++r) {
        const float* in = x + r * cols; float* out = y + r * cols;
        const long body = cols / L * L;
        Floats16 running; for (int l = 0; l < L; ++l) running[l] = in[0];
        for (long c = 0; c < body; c += L) { Floats16 v; std::memcpy(&v, in + c, 64); running = v > running ? v : running; }
        Floats16 tail; for (int l = 0; l < L; ++l) tail[l] = body + l < cols ? in[body + l] : -INFINITY;
        running = tail > running ? tail : running;
        const float m = std::max(in[0], lanes_max(running));
        Floats16 sums{};
        for (long c = 0; c < body; c += L) { Floats16 v; std::memcpy(&v, in + c, 64); sums += exp_inline(v - m); }
        sums += exp_inline(tail - m);
        const float total = lanes_sum(sums); const float lt = std::log(total);
        for (long c = 0; c < cols; ++c) out[c] = (in[c] - m) - lt;
    }
}
// AVX-512: t = x - m <= 0, so only the lower clamp (one vmaxps), round with vrndscale,
// 2^n with vscalefps (no int conversion, no shift). DEG = Taylor degree.
template <int DEG> T512 __attribute__((always_inline)) inline __m512 exp_neg(__m512 t) {
    t = _mm512_max_ps(_mm512_set1_ps(-88.0f), t);  // NaN in t stays NaN (max returns its second operand)
    const __m512 fn = _mm512_roundscale_ps(_mm512_mul_ps(t, _mm512_set1_ps(1.44269504f)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(fn, _mm512_set1_ps(0.693145752f), t);
    r = _mm512_fnmadd_ps(fn, _mm512_set1_ps(1.42860677e-6f), r);
    __m512 p;
    if constexpr (DEG == 6) {
        p = _mm512_fmadd_ps(r, _mm512_set1_ps(1.0f / 720), _mm512_set1_ps(1.0f / 120));
        p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 24));
    } else {
        p = _mm512_fmadd_ps(r, _mm512_set1_ps(1.0f / 120), _mm512_set1_ps(1.0f / 24));
    }
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 6));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
    return _mm512_scalef_ps(p, fn);
}
template <int DEG> T512 void avx512(const float* __restrict x, float* __restrict y, long rows, long cols) {
    for (long r = 0; r < rows; ++r) {
        const float* in = x + r * cols; float* out = y + r * cols;
        const long body = cols / 16 * 16;
        const __mmask16 tm = (__mmask16)((1u << (cols - body)) - 1);
        __m512 run = _mm512_set1_ps(in[0]);
        for (long c = 0; c < body; c += 16) run = _mm512_max_ps(run, _mm512_loadu_ps(in + c));
        const __m512 tail = _mm512_mask_loadu_ps(_mm512_set1_ps(-INFINITY), tm, in + body);
        run = _mm512_max_ps(run, tail);
        const float m = std::max(in[0], _mm512_reduce_max_ps(run));
        const __m512 mv = _mm512_set1_ps(m);
        __m512 sums = _mm512_setzero_ps();
        for (long c = 0; c < body; c += 16) sums = _mm512_add_ps(sums, exp_neg<DEG>(_mm512_sub_ps(_mm512_loadu_ps(in + c), mv)));
        sums = _mm512_add_ps(sums, exp_neg<DEG>(_mm512_sub_ps(tail, mv)));
        const float total = _mm512_reduce_add_ps(sums); const float lt = std::log(total);
        for (long c = 0; c < cols; ++c) out[c] = (in[c] - m) - lt;
    }
}
template <class F> double run(F f, const float* x, float* y, long rows, long cols) {
    double best = 1e30;
    for (int rep = 0; rep < 7; ++rep) {
        auto t0 = std::chrono::steady_clock::now();
        for (int k = 0; k < 1000; ++k) f(x, y, rows, cols);
        best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / 1000);
    }
    return rows * cols / best * 1e-9;
}
int main() {
    const long rows = 32, cols = 1024;
    std::vector<float> x(rows * cols), y1(x.size()), y2(x.size()), y3(x.size());
    for (long i = 0; i < (long)x.size(); ++i) x[i] = ((i * 7919) % 997) * 0.03f - 15.0f;
    generic(x.data(), y1.data(), rows, cols); avx512<6>(x.data(), y2.data(), rows, cols); avx512<5>(x.data(), y3.data(), rows, cols);
    long diff6 = 0, diff5 = 0; double maxd5 = 0;
    for (size_t i = 0; i < x.size(); ++i) { diff6 += y1[i] != y2[i]; diff5 += y1[i] != y3[i]; maxd5 = std::max(maxd5, (double)std::abs(y1[i]-y3[i])); }
    std::printf("differ from generic: deg6 %ld, deg5 %ld (max %.3g) of %zu\n", diff6, diff5, maxd5, x.size());
    for (int round = 0; round < 3; ++round)
        std::printf("G el/s one thread, L2: generic %.2f  avx512 deg6 %.2f  deg5 %.2f\n", run(generic, x.data(), y1.data(), rows, cols),
                    run(avx512<6>, x.data(), y2.data(), rows, cols), run(avx512<5>, x.data(), y3.data(), rows, cols));
}
