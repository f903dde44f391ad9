// Portable vs AVX-512 log-softmax, alternating: rows in L2 and rows streamed from memory, 1 and 2 threads.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>
#include "kernels/cpu/elementwise.hpp"
#include "parallel/thread_pool.hpp"
using gl::kernels::SoftmaxVersion;
double gels(long rows, long cols, const float* x, float* y, SoftmaxVersion v, int reps) {
    double best = 1e30;
    for (int k = 0; k < reps; ++k) {
        auto t0 = std::chrono::steady_clock::now();
        gl::kernels::log_softmax_rows(x, y, rows, cols, v);
        best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    return rows * cols / best * 1e-9;
}
int main() {
    const long cols = 1024;
    for (int threads : {1, 2}) {
        gl::set_num_threads(threads);
        for (long rows : {64L * threads, 65536L}) {
            std::vector<float> x(rows * cols), y(x.size(), 0.0f);
            for (long i = 0; i < (long)x.size(); ++i) x[i] = (i % 97) * 0.1f;
            const int reps = rows < 1000 ? 2000 : 5;
            for (int round = 0; round < 3; ++round) {
                double p = gels(rows, cols, x.data(), y.data(), SoftmaxVersion::portable, reps);
                double b = gels(rows, cols, x.data(), y.data(), SoftmaxVersion::best, reps);
                std::printf("%d threads, %s: portable %.2f, avx512 %.2f G el/s (%.1f / %.1f GB/s counted), ratio %.2f\n", threads,
                            rows < 1000 ? "L2 " : "mem", p, b, p * 8, b * 8, b / p);
            }
        }
    }
}
