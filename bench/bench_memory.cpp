// Lab 07 benchmarks: gradient checkpointing, the caching allocator and the cost of
// memory tracking, each variant in the same run so their ratios can be read directly.
//
//   BM_DeepMlpStep/S        one training step of the deep MLP (32 Linear-ReLU layers of
//                           width 256, batch 64) with S checkpoint segments (0: none)
//   BM_SimpleNetStepAlloc/A SimpleNet, batch 1024, with new tensors from A = 0 fresh
//                           pages (mmap), 1 malloc, 2 the caching allocator over fresh pages
//   BM_SimpleNetStepTracked/T  SimpleNet batch 64, T = 1 with the tracking allocator
//
// Times are process CPU time (all threads, user + system: page faults are system time),
// steadier than wall time on a shared machine.
// Run: build/bench/bench_memory --benchmark_format=json --benchmark_out=bench_memory.json
//      (add --benchmark_repetitions=5 --benchmark_min_time=0.5 for steadier medians)
#include <benchmark/benchmark.h>

#include "memory/caching_allocator.hpp"
#include "memory/page_allocator.hpp"
#include "memory/tracking_allocator.hpp"
#include "nn/deep_mlp.hpp"
#include "ops/ops.hpp"
#include "optim/optimizer.hpp"
#include "training/memory_profile.hpp"

namespace {

constexpr std::int64_t kLayers = 32, kWidth = 256, kBatch = 64;

gl::Tensor targets(std::int64_t batch) {
    gl::Tensor y = gl::empty({batch}, gl::DType::Int32);
    for (std::int64_t i = 0; i < batch; ++i) y.data<std::int32_t>()[i] = static_cast<std::int32_t>(i % 10);
    return y;
}

// One training step of @p net with @p segments (0: plain forward).
void train_step(gl::nn::Sequential& net, gl::optim::Optimizer& opt, const gl::Tensor& x, const gl::Tensor& y,
                std::size_t segments) {
    opt.zero_grad();
    const gl::Tensor loss = gl::cross_entropy(gl::training::forward_in_segments(net, x, segments), y);
    loss.backward();
    opt.step();
    benchmark::DoNotOptimize(loss.item());
}

void BM_DeepMlpStep(benchmark::State& state) {
    const auto segments = static_cast<std::size_t>(state.range(0));
    gl::Rng rng(0);
    auto net = gl::nn::make_deep_mlp(rng, kLayers, kWidth, kWidth);
    gl::optim::SGD opt(net->parameters(), 0.01);
    const gl::Tensor x = gl::randn({kBatch, kWidth}, rng);
    const gl::Tensor y = targets(kBatch);
    for (auto _ : state) train_step(*net, opt, x, y, segments);
    state.counters["segments"] = static_cast<double>(segments);
}
// 33 modules: none, 1, 2, 4, sqrt(33) ~ 6, 33.
BENCHMARK(BM_DeepMlpStep)->Arg(0)->Arg(1)->Arg(2)->Arg(4)->Arg(6)->Arg(33)->MeasureProcessCPUTime()->Unit(benchmark::kMillisecond);

void BM_SimpleNetStepAlloc(benchmark::State& state) {
    gl::memory::CachingAllocator cache(gl::memory::page_allocator());
    gl::Allocator* choices[] = {&gl::memory::page_allocator(), &gl::cpu_allocator(), &cache};
    gl::memory::DefaultAllocatorScope use(*choices[state.range(0)]);
    gl::Rng rng(0);
    auto net = gl::nn::make_simple_net(rng);
    gl::optim::SGD opt(net->parameters(), 0.01);
    const gl::Tensor x = gl::randn({1024, 784}, rng);
    const gl::Tensor y = targets(1024);
    for (auto _ : state) train_step(*net, opt, x, y, 0);
    state.SetLabel(choices[state.range(0)]->name());
}
BENCHMARK(BM_SimpleNetStepAlloc)->Arg(0)->Arg(1)->Arg(2)->MeasureProcessCPUTime()->Unit(benchmark::kMillisecond);

void BM_SimpleNetStepTracked(benchmark::State& state) {
    gl::memory::TrackingAllocator tracker;
    gl::memory::DefaultAllocatorScope use(state.range(0) ? static_cast<gl::Allocator&>(tracker) : gl::cpu_allocator());
    {
        gl::Rng rng(0);
        auto net = gl::nn::make_simple_net(rng);
        gl::optim::Adam opt(net->parameters(), 1e-3);
        const gl::Tensor x = gl::randn({kBatch, 784}, rng);
        const gl::Tensor y = targets(kBatch);
        for (auto _ : state) train_step(*net, opt, x, y, 0);
    }
    state.SetLabel(state.range(0) ? "tracked" : "untracked");
}
BENCHMARK(BM_SimpleNetStepTracked)->Arg(0)->Arg(1)->MeasureProcessCPUTime()->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
