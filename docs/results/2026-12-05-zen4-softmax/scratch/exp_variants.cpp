// The exp of the log-softmax's pass 2, variants on one thread with rows of 1024 in L2 (no
// memory traffic): the portable exp, the vscalefps one (degree-6 Taylor, Horner), and two
// tried and not kept: degree 5 (results change) and Estrin's scheme for degree 6.
#include <cstdio>
#include "copies.hpp"

T512 __attribute__((always_inline)) inline Floats16 scalef_masked(Floats16 p, Floats16 fn) {
    const __mmask16 ok = _mm512_cmp_ps_mask(__m512(fn), _mm512_set1_ps(-126.0f), _CMP_NLT_UQ);
    return Floats16(_mm512_maskz_scalef_ps(ok, __m512(p), __m512(fn)));
}
T512 __attribute__((always_inline)) inline Floats16 exp_deg5(Floats16 t) {
    const Floats16 fn = npt(t), r = red(t, fn);
    Floats16 p = r * (1.0f / 120) + 1.0f / 24;
    p = p * r + 1.0f / 6; p = p * r + 0.5f; p = p * r + 1.0f; p = p * r + 1.0f;
    return scalef_masked(p, fn);
}
T512 __attribute__((always_inline)) inline Floats16 exp_estrin(Floats16 t) {
    const Floats16 fn = npt(t), r = red(t, fn), r2 = r * r, r4 = r2 * r2;
    const Floats16 a = r + 1.0f, b = r * (1.0f / 6) + 0.5f, c = r * (1.0f / 120) + 1.0f / 24;
    return scalef_masked(r4 * (r2 * (1.0f / 720) + c) + (r2 * b + a), fn);
}
// Pass 2 alone would not show the per-row costs; this is the whole kernel with @p Exp.
template <int V> T512 void rows_with(const float* __restrict x, float* __restrict y, long rows, long cols) {
    for (long r = 0; r < rows; ++r) {
        const float* in = x + r * cols; float* out = y + r * cols;
        Floats16 run; for (int l = 0; l < 16; ++l) run[l] = in[0];
        for (long c = 0; c < cols; c += 16) { Floats16 v; std::memcpy(&v, in + c, 64); run = v > run ? v : run; }
        const float m = std::max(in[0], lanes_max(run));
        Floats16 sums{};
        for (long c = 0; c < cols; c += 16) {
            Floats16 v; std::memcpy(&v, in + c, 64);
            sums += V == 0 ? expp(v - m) : V == 1 ? expn(v - m) : V == 2 ? exp_deg5(v - m) : exp_estrin(v - m);
        }
        const float lt = std::log(lanes_sum(sums));
        for (long c = 0; c < cols; ++c) out[c] = (in[c] - m) - lt;
    }
}
int main() {
    const long rows = 32, cols = 1024;
    std::vector<float> x(rows * cols), y(x.size());
    for (long i = 0; i < rows * cols; ++i) x[i] = ((i * 7919) % 997) * 0.03f - 15.0f;
    const char* names[] = {"portable", "vscalefps, degree 6", "vscalefps, degree 5", "vscalefps, Estrin"};
    void (*fs[])(const float*, float*, long, long) = {rows_with<0>, rows_with<1>, rows_with<2>, rows_with<3>};
    for (int round = 0; round < 3; ++round) {
        for (int v = 0; v < 4; ++v) {
            double best = 1e9;
            for (int k = 0; k < 2000; ++k) best = std::min(best, once([&] { fs[v](x.data(), y.data(), rows, cols); }));
            std::printf("%s %.2f  ", names[v], rows * cols / best * 1e-9);
        }
        std::printf("G elements/s, one thread\n");
    }
}
