// Training-step throughput of SimpleNet (784-128-10): one forward, loss, backward and Adam
// update per iteration, on random data of Fashion-MNIST's shape, for every GEMM kernel.
// Run: build/bench/bench_train_step --benchmark_format=json
#include <benchmark/benchmark.h>

#include "kernels/gemm.hpp"
#include "nn/module.hpp"
#include "ops/ops.hpp"
#include "optim/optimizer.hpp"

namespace {

void BM_SimpleNetTrainStep(benchmark::State& state, const std::string& kernel) {
    const auto batch = state.range(0);
    if (const std::string why = gl::kernels::why_unavailable(gl::kernels::find_gemm(kernel)); !why.empty()) {
        state.SkipWithError(("not measured: " + kernel + " cannot run here: " + why).c_str());
        return;
    }
    const std::string previous = gl::kernels::default_gemm().name;
    gl::kernels::set_default_gemm(kernel);
    gl::Rng rng(0);
    auto net = gl::nn::make_simple_net(rng);
    gl::optim::Adam opt(net->parameters(), 1e-3);
    const gl::Tensor x = gl::randn({batch, 784}, rng);
    gl::Tensor y = gl::empty({batch}, gl::DType::Int32);
    for (std::int64_t i = 0; i < batch; ++i) y.data<std::int32_t>()[i] = static_cast<std::int32_t>(i % 10);
    for (auto _ : state) {
        opt.zero_grad();
        const gl::Tensor loss = gl::cross_entropy((*net)(x), y);
        loss.backward();
        opt.step();
        benchmark::DoNotOptimize(loss.item());
    }
    state.counters["samples/s"] = benchmark::Counter(static_cast<double>(batch), benchmark::Counter::kIsIterationInvariantRate);
    // Three GEMMs per layer per step (forward, and two in backward), 2 flops per multiply-add.
    const double flops = 3.0 * 2.0 * static_cast<double>(batch) * (784.0 * 128.0 + 128.0 * 10.0);
    state.counters["GFLOP/s"] = benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
    gl::kernels::set_default_gemm(previous);
}

BENCHMARK_CAPTURE(BM_SimpleNetTrainStep, eigen, std::string("eigen"))->Arg(64)->Arg(256)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_SimpleNetTrainStep, threaded, std::string("threaded"))->Arg(64)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_SimpleNetTrainStep, small, std::string("small"))->Arg(64)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_SimpleNetTrainStep, medium, std::string("medium"))->Arg(64)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_SimpleNetTrainStep, naive, std::string("naive"))->Arg(64)->Unit(benchmark::kMicrosecond);
// The CUDA SGEMM family on a GPU (skipped without one); the operands cross PCIe every GEMM.
BENCHMARK_CAPTURE(BM_SimpleNetTrainStep, cuda, std::string("cuda"))->Arg(64)->Arg(256)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
