// The log-softmax from memory (2 threads, 256 MiB arrays, rows of 1024): how far ahead to
// prefetch the input, with which hint, and whether to prefetch the output row too, each
// against y = x + 1 over the same arrays run just before it; medians of 5 rounds.
#include <cstdio>
#include <cstdlib>
#include "copies.hpp"
T512 void twin(const float* __restrict x, float* __restrict y, long rows, long cols) {
    for (long i = 0; i < rows * cols; ++i) y[i] = x[i] + 1.0f;
}
using F = void (*)(const float*, float*, long, long);
double gbs_moved(F f, const float* x, float* y, long rows, long cols) {
    double best = 1e30;
    for (int k = 0; k < 3; ++k)
        best = std::min(best, once([&] {
            gl::parallel_run(2, [&](int t) { long lo = rows * t / 2, hi = rows * (t + 1) / 2; f(x + lo * cols, y + lo * cols, hi - lo, cols); });
        }));
    return rows * cols * 12.0 / best * 1e-9;
}
int main() {
    const long cols = 1024, rows = 65536;
    float* x = (float*)std::aligned_alloc(64, rows * cols * 4); float* y = (float*)std::aligned_alloc(64, rows * cols * 4);
    gl::parallel_run(2, [&](int t) { for (long i = rows * cols * t / 2; i < rows * cols * (t + 1) / 2; ++i) { x[i] = (i % 97) * 0.1f; y[i] = 0; } });
    struct V { const char* name; F f; } vs[] = {{"twin", twin}, {"none", var_range<true, false, 0, 0>}, {"d2 t0 w", var_range<true, true, 2, 0>}, {"d1 t0 -", var_range<true, false, 1, 0>},
        {"d2 t0 -", var_range<true, false, 2, 0>}, {"d3 t0 -", var_range<true, false, 3, 0>}, {"d4 t0 -", var_range<true, false, 4, 0>}, {"d2 t1 -", var_range<true, false, 2, 1>}, {"d4 t1 -", var_range<true, false, 4, 1>}};
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
