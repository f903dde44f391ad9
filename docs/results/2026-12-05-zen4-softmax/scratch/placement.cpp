// Where the arrays are matters on this VM: the same STREAM loop (hw::StreamLoop, read 2,
// write 1: the triad's traffic) over two sets of arrays allocated one after the other,
// single passes alternating, 2 threads, 256 MiB arrays; medians of 20 passes each.
#include <cstdio>
#include "copies.hpp"
#include "hw/probes.hpp"

int main() {
    gl::set_num_threads(2);
    const std::int64_t n = (256 << 20) / 4;
    std::vector<std::vector<float>> first(3, std::vector<float>(n, 0.5f)), second(3, std::vector<float>(n, 0.5f));
    const gl::hw::StreamLoop on_first({2, 0, 1}, {first[0].data(), first[1].data(), first[2].data()}, n, 2);
    const gl::hw::StreamLoop on_second({2, 0, 1}, {second[0].data(), second[1].data(), second[2].data()}, n, 2);
    std::vector<double> a, b;
    for (int r = 0; r < 20; ++r) {
        if (r % 2 == 0) { a.push_back(on_first.pass_gbs() * 4 / 3); b.push_back(on_second.pass_gbs() * 4 / 3); }
        else { b.push_back(on_second.pass_gbs() * 4 / 3); a.push_back(on_first.pass_gbs() * 4 / 3); }
    }
    std::printf("read 2, write 1 over the arrays allocated first: %.1f GB/s moved; over those allocated second: %.1f (ratio %.2f)\n",
                med(a), med(b), med(b) / med(a));
}
