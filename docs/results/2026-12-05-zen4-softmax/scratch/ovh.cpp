// Per-row overhead of the log-softmax: G elements/s on one thread, rows in L2, by row length.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>
#include "kernels/cpu/elementwise.hpp"
#include "parallel/thread_pool.hpp"
int main() {
    gl::set_num_threads(1);
    for (long cols : {256L, 1024L, 4096L, 16384L}) {
        const long rows = 65536 / cols;
        std::vector<float> x(rows * cols), y(x.size());
        for (long i = 0; i < (long)x.size(); ++i) x[i] = (i % 97) * 0.1f;
        double best = 1e9;
        for (int k = 0; k < 3000; ++k) {
            auto t0 = std::chrono::steady_clock::now();
            gl::kernels::log_softmax_rows(x.data(), y.data(), rows, cols);
            best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
        }
        std::printf("cols %5ld: %.2f G el/s, %.0f ns a row\n", cols, rows * cols / best * 1e-9, best / rows * 1e9);
    }
}
