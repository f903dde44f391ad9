// Lab 14 benchmarks: the cycle-level systolic array simulator.
//
//   BM_SystolicInt8/S/N     an N x N x N int8 GEMM on an S x S weight-stationary array,
//                           every cell stepped every cycle (the plain simulator). The
//                           acceptance case is S = 256 (TPU v1's array), N = 1024: it must
//                           finish within 60 s on 2 cores.
//   BM_SystolicDataflow/F   64 x 64 x 64 on a 16 x 16 array, F = 0 weight-, 1 output-stationary
//
// Counters: simulated cycles, cell-steps per second, and the array's utilization.
// Run: build/bench/bench_systolic --benchmark_filter='SystolicInt8/256/1024'
//      (one iteration of the acceptance case: --benchmark_min_time=1x)
#include <benchmark/benchmark.h>

#include "systolic/systolic.hpp"
#include "testkit/systolic_cases.hpp"

namespace {

using namespace gl::systolic;

void report(benchmark::State& state, const Counts& counts, ArrayShape array) {
    state.counters["cycles"] = static_cast<double>(counts.cycles);
    state.counters["utilization"] = utilization(counts, array);
    state.counters["cell_steps/s"] =
        benchmark::Counter(static_cast<double>(counts.cycles * array.rows * array.cols) * static_cast<double>(state.iterations()),
                           benchmark::Counter::kIsRate);
}

void BM_SystolicInt8(benchmark::State& state) {
    const std::int64_t size = state.range(0), n = state.range(1);
    const ArrayShape array{size, size};
    const auto A = gl::testkit::random_int8_matrix(n, n, 1), B = gl::testkit::random_int8_matrix(n, n, 2);
    Counts counts;
    for (auto _ : state) {
        const auto run = systolic_gemm(A, B, array, Dataflow::WeightStationary);
        counts = run.counts;
        benchmark::DoNotOptimize(run.C.data.data());
    }
    if (counts != closed_form(n, n, n, array, Dataflow::WeightStationary))
        state.SkipWithError("the simulated counts differ from the closed form");
    report(state, counts, array);
}
BENCHMARK(BM_SystolicInt8)->Args({16, 256})->Args({256, 1024})->Unit(benchmark::kSecond)->Iterations(1);

void BM_SystolicDataflow(benchmark::State& state) {
    const Dataflow flow = state.range(0) == 0 ? Dataflow::WeightStationary : Dataflow::OutputStationary;
    const ArrayShape array{16, 16};
    const auto A = gl::testkit::random_int8_matrix(64, 64, 1), B = gl::testkit::random_int8_matrix(64, 64, 2);
    Counts counts;
    for (auto _ : state) {
        const auto run = systolic_gemm(A, B, array, flow);
        counts = run.counts;
        benchmark::DoNotOptimize(run.C.data.data());
    }
    report(state, counts, array);
}
BENCHMARK(BM_SystolicDataflow)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
