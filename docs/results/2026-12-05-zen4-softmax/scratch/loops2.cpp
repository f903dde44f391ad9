// Single passes over persistent arrays: the triad against pattern {2,0,1} (same traffic) and {1,0,1}, in rotating order.
#include <algorithm>
#include <cstdio>
#include <vector>
#include "hw/probes.hpp"
#include "parallel/thread_pool.hpp"
double med(std::vector<double> v) { std::sort(v.begin(), v.end()); return v[v.size() / 2]; }
int main() {
    gl::set_num_threads(2);
    const std::int64_t bytes = 256 << 20;
    std::vector<gl::hw::StreamLoop> loops;
    auto p201 = gl::hw::StreamLoop::pattern({2, 0, 1}, bytes, 2);
    loops.push_back(gl::hw::StreamLoop::triad(bytes, 2));
    loops.push_back(std::move(p201));
    loops.push_back(gl::hw::StreamLoop::pattern({1, 0, 1}, bytes, 2));
    const char* names[] = {"triad", "pattern 2,0,1", "pattern 1,0,1"};
    const double moved_per_counted[] = {4.0 / 3, 4.0 / 3, 3.0 / 2};
    std::vector<double> g[3];
    for (int r = 0; r < 20; ++r)
        for (int k = 0; k < 3; ++k) { int w = (r + k) % 3; g[w].push_back(loops[w].pass_gbs() * moved_per_counted[w]); }
    for (int w = 0; w < 3; ++w) std::printf("%s: median %.1f GB/s moved (single passes, persistent)\n", names[w], med(g[w]));
    for (int r = 0; r < 0; ++r)
        std::printf("fresh, best of 3: triad %.1f, pattern 2,0,1 %.1f, pattern 1,0,1 %.1f moved\n", gl::hw::stream_triad(bytes, 2, 3).gbs * 4 / 3,
                    gl::hw::stream_pattern({2, 0, 1}, bytes, 2, 3).gbs * 4 / 3, gl::hw::stream_pattern({1, 0, 1}, bytes, 2, 3).gbs * 3 / 2);
}
