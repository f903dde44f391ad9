// The profiler's cost (claim PROF-1's "no measurable cost when off, <= 5% when on"):
// SimpleNet (784-128-10) training steps with the profiler off and on, and the cost of one
// scope off and on. Built twice: the default build (scopes compiled in) gives "off" and
// "on"; a build configured with -Dprofiler=false (scopes compiled to nothing) gives "no
// profiler", and skips the "on" benchmarks. bench/profiler_overhead.py runs both binaries
// in alternating rounds and prints the ratios.
// Run one binary (alternating rounds in one run):
//   build/bench/bench_profiler --benchmark_repetitions=5
//       --benchmark_enable_random_interleaving=true --benchmark_format=json
#include <benchmark/benchmark.h>

#include "nn/module.hpp"
#include "ops/ops.hpp"
#include "optim/optimizer.hpp"
#include "profiler/profiler.hpp"

namespace {

struct SimpleNetStep {
    gl::Rng rng{0};
    std::shared_ptr<gl::nn::Sequential> net = gl::nn::make_simple_net(rng);
    gl::optim::Adam opt{net->parameters(), 1e-3};
    gl::Tensor x = gl::randn({64, 784}, rng);
    gl::Tensor y = gl::empty({64}, gl::DType::Int32);
    SimpleNetStep() {
        for (std::int64_t i = 0; i < 64; ++i) y.data<std::int32_t>()[i] = static_cast<std::int32_t>(i % 10);
    }
    void run() {
        opt.zero_grad();
        const gl::Tensor loss = gl::cross_entropy((*net)(x), y);
        loss.backward();
        opt.step();
        benchmark::DoNotOptimize(loss.item());
    }
};

void BM_StepProfilerOff(benchmark::State& state) {
    SimpleNetStep step;
    for (auto _ : state) step.run();
}

void BM_StepProfilerOn(benchmark::State& state) {
    if (!gl::prof::kCompiledIn) return state.SkipWithError("the profiler is compiled out (-Dprofiler=false)");
    SimpleNetStep step;
    gl::prof::Profiler profiler({.schedule = {.wait = 0, .warmup = 0, .active = 1 << 30}});
    profiler.start();
    for (auto _ : state) {
        step.run();
        profiler.step();
    }
    profiler.stop();
    const auto steps = static_cast<double>(profiler.trace().steps);
    state.counters["scopes_per_step"] = steps > 0 ? static_cast<double>(profiler.trace().events.size()) / steps : 0.0;
}

void BM_ScopeOff(benchmark::State& state) {
    for (auto _ : state) {
        gl::prof::Scope s(gl::prof::Category::User, "off");
        benchmark::DoNotOptimize(&s);
    }
}

void BM_ScopeOn(benchmark::State& state) {
    if (!gl::prof::kCompiledIn) return state.SkipWithError("the profiler is compiled out (-Dprofiler=false)");
    gl::prof::Profiler profiler({.schedule = {.wait = 0, .warmup = 0, .active = 1 << 30}});
    profiler.start();
    for (auto _ : state) {
        gl::prof::Scope s(gl::prof::Category::User, "on");
        benchmark::DoNotOptimize(&s);
    }
    profiler.stop();
}

BENCHMARK(BM_StepProfilerOff)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_StepProfilerOn)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_ScopeOff);
BENCHMARK(BM_ScopeOn);

}  // namespace

BENCHMARK_MAIN();
