// The row log-softmax from memory, A/B in one process (2 threads, 256 MiB arrays, rows of
// 1024): variants rotate, and every call comes right after one pass of a loop with the
// triad's traffic and one with the kernel's own (its twin); medians of the ratios.
//   ab float-loops ITERS   float loops over other arrays (d = b + 3c, d = a + 1), five variants
//   ab stream-loops ITERS  MEM-1's loops (hw::StreamLoop) over the kernel's arrays, five variants
//   ab library-twice ITERS MEM-1's loops; the library and its standalone copy, twice each
#include <cstdio>
#include <cstdlib>
#include <string>
#include "copies.hpp"
#include "hw/probes.hpp"
#include "kernels/cpu/elementwise.hpp"

int main(int argc, char** argv) {
    const std::string mode = argc > 1 ? argv[1] : "stream-loops";
    const int iters = argc > 2 ? std::atoi(argv[2]) : 60;
    gl::set_num_threads(2);
    const std::int64_t bytes = 256 << 20, n = bytes / 4, cols = 1024;
    std::vector<float> a(n, 0.5f), b(n, 0.5f), c(n, 0.25f), d(n, 0.0f);
    using F = void (*)(const float*, float*, long, long);
    struct V { const char* name; F f; };
    const F library = [](const float* x, float* y, long r, long cc) { gl::kernels::log_softmax_rows(x, y, r, cc); };
    std::vector<V> vs = {{"portable exp, prefetch in+out (72bebf0)", var_rows<false, true>},
                         {"portable exp, prefetch in", var_rows<false, false>},
                         {"scalef exp, prefetch in+out", var_rows<true, true>},
                         {"scalef exp, prefetch in", var_rows<true, false>},
                         {"library (c51baae)", library}};
    if (mode == "library-twice")
        vs = {{"library (c51baae)", library}, {"scalef exp, prefetch in", var_rows<true, false>},
              {"library again", library}, {"scalef exp, prefetch in, again", var_rows<true, false>}};
    // The references: the kernel reads a and writes b.
    const gl::hw::StreamLoop twin_loop({1, 0, 1}, {a.data(), b.data()}, n, 2);
    const gl::hw::StreamLoop triad_loop({2, 0, 1}, {a.data(), c.data(), b.data()}, n, 2);
    auto twin = [&] {
        if (mode == "float-loops")
            gl::parallel_for(n, 1 << 16, [&](std::int64_t lo, std::int64_t hi) { for (std::int64_t i = lo; i < hi; ++i) d[i] = a[i] + 1.0f; });
        else twin_loop.pass_gbs();
    };
    auto triad = [&] {
        if (mode == "float-loops")
            gl::parallel_for(n, 1 << 16, [&](std::int64_t lo, std::int64_t hi) { for (std::int64_t i = lo; i < hi; ++i) d[i] = b[i] + 3.0f * c[i]; });
        else triad_loop.pass_gbs();
    };
    const int nv = static_cast<int>(vs.size());
    std::vector<std::vector<double>> of_triad(nv), of_twin(nv), gbs(nv);
    for (auto& v : vs) v.f(a.data(), b.data(), n / cols, cols);  // warm
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
