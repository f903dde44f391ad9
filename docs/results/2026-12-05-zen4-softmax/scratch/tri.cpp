// Why is the triad slower than a loop with the same traffic? Variants over the same arrays, single passes, rotating.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include "hw/probes.hpp"
#include "parallel/thread_pool.hpp"
#define T __attribute__((target("avx512f")))
T void tri(double* a, const double* b, const double* c, long lo, long hi) { for (long i = lo; i < hi; ++i) a[i] = b[i] + 3.0 * c[i]; }
T void add1(double* a, const double* b, const double* c, long lo, long hi) { for (long i = lo; i < hi; ++i) a[i] = 1.0 + b[i] + c[i]; }
T void tri_ro(double* a, const double* b, const double* c, long lo, long hi) { for (long i = lo; i < hi; ++i) c[0] == 0 ? (void)(a[i] = b[i] + 3.0 * c[i]) : (void)0; }
double med(std::vector<double> v) { std::sort(v.begin(), v.end()); return v[v.size() / 2]; }
int main() {
    gl::set_num_threads(2);
    const long n = (256 << 20) / 8;
    double* x[3];
    for (auto& p : x) { p = (double*)std::aligned_alloc(64, n * 8); }
    gl::parallel_run(2, [&](int t) { long lo = n * t / 2, hi = n * (t + 1) / 2; for (long i = lo; i < hi; ++i) { x[0][i] = 1; x[1][i] = 2; x[2][i] = 0; } });
    using F = void (*)(double*, const double*, const double*, long, long);
    struct V { const char* name; F f; int wa, ra, rb; } vs[] = {
        {"triad a=b+3c (write x0)", tri, 0, 1, 2}, {"1+b+c (write x0)", add1, 0, 1, 2}, {"triad (write x2)", tri, 2, 0, 1}, {"1+b+c (write x2)", add1, 2, 0, 1}};
    std::vector<double> g[4];
    for (int r = 0; r < 20; ++r)
        for (int k = 0; k < 4; ++k) {
            int w = (r + k) % 4; auto& v = vs[w];
            auto t0 = std::chrono::steady_clock::now();
            gl::parallel_run(2, [&](int t) { v.f(x[v.wa], x[v.ra], x[v.rb], n * t / 2, n * (t + 1) / 2); });
            g[w].push_back(32.0 * n / std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() * 1e-9);
        }
    for (int w = 0; w < 4; ++w) std::printf("%-26s median %.1f GB/s moved\n", vs[w].name, med(g[w]));
    std::printf("arrays at %p %p %p\n", (void*)x[0], (void*)x[1], (void*)x[2]);
}
