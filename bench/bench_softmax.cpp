// The row log-softmax's two versions side by side (kernels/cpu/elementwise.hpp): the
// portable one and the AVX-512 one (vscalefps builds 2^n), on rows that sit in L2 (the
// kernel's compute ceiling) and on rows streamed from memory (what MEM-1 measures).
// Every call comes right after one pass of a STREAM loop with the same traffic over the
// same arrays (read x, write y: hw::StreamLoop), and the counter of_twin is the loop's
// time over the kernel's (1 = as fast as the loop; in L2, where the loop is not limited by
// memory, far below 1). bytes_per_second counts what STREAM would count (8 bytes an
// element).
//
// Run: build/bench/bench_softmax --benchmark_out=softmax.json --benchmark_out_format=json
// Threads: GRADLAB_THREADS (default 2).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <vector>

#include "hw/probes.hpp"
#include "kernels/cpu/elementwise.hpp"
#include "parallel/thread_pool.hpp"

namespace {

using gl::kernels::SoftmaxVersion;

constexpr std::int64_t kCols = 1024;                  // 4 KiB rows
constexpr std::int64_t kRowsInL2 = 64;                // 256 KiB in and out a thread
constexpr std::int64_t kRowsFromMemory = 64 * 1024;   // 256 MiB in and out, far beyond L3

std::vector<float> logits(std::int64_t n) {
    std::vector<float> x(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i) x[static_cast<std::size_t>(i)] = static_cast<float>(i % 97) * 0.1f;
    return x;
}

std::int64_t rows_for(std::int64_t where) { return where == 0 ? kRowsInL2 * gl::get_num_threads() : kRowsFromMemory; }

// Args: {version (0 portable, 1 best), where (0 L2, 1 memory)}.
void BM_LogSoftmax(benchmark::State& state) {
    const auto version = state.range(0) == 0 ? SoftmaxVersion::portable : SoftmaxVersion::best;
    const std::int64_t rows = rows_for(state.range(1)), n = rows * kCols;
    auto x = logits(n);  // the twin only reads it
    std::vector<float> y(x.size());
    const gl::hw::StreamLoop twin({1, 0, 1}, {x.data(), y.data()}, n, gl::get_num_threads());
    double kernel_seconds = 0.0, twin_seconds = 0.0;
    for (auto _ : state) {
        twin_seconds += twin.counted_bytes() / (twin.pass_gbs() * 1e9);  // reads x, rewrites y
        const auto start = std::chrono::steady_clock::now();
        gl::kernels::log_softmax_rows(x.data(), y.data(), rows, kCols, version);
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        state.SetIterationTime(seconds);
        kernel_seconds += seconds;
    }
    state.SetBytesProcessed(state.iterations() * n * 8);
    state.counters["of_twin"] = twin_seconds / kernel_seconds;
    state.SetLabel(version == SoftmaxVersion::portable     ? "portable"
                   : gl::kernels::log_softmax_uses_avx512() ? "avx512"
                                                            : "portable (no AVX-512 here)");
}
BENCHMARK(BM_LogSoftmax)->ArgsProduct({{0, 1}, {0, 1}})->ArgNames({"version", "memory"})->UseManualTime();

}  // namespace

int main(int argc, char** argv) {
    const char* threads = std::getenv("GRADLAB_THREADS");
    gl::set_num_threads(threads != nullptr ? std::max(1, std::atoi(threads)) : 2);
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}
