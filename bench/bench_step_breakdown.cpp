// One SimpleNet (784-128-10, Adam, batch 64) training step taken apart by phase, so that
// each change to the step is chosen by data: every GEMM by its real shape (as matmul and
// its backward call them), every element-wise kernel, the loss and the optimizer, each
// on raw arrays; then the framework's own costs (a tensor allocation, recording a node of
// the autograd graph, the GEMM registry's dispatch, a thread-pool wake-up); then the whole
// eager step. Each benchmark carries a "calls" counter (how often one step runs it), so
// tools/step_breakdown.py can sum the phases, subtract them from the whole step and show
// the rest (the framework overhead no row itemizes) in one table.
//
// Run (2 threads, the default kernel):
//   build/bench/bench_step_breakdown --benchmark_out=step.json --benchmark_out_format=json
//   python3 tools/step_breakdown.py step.json
// Options before Google Benchmark's own: --gemm=NAME (the kernel matmul uses; default
// the registry's default) and --threads=N (default 2).
#include <benchmark/benchmark.h>

#include <cstring>
#include <string>
#include <vector>

#include "autograd/grad_mode.hpp"
#include "kernels/cpu/elementwise.hpp"
#include "kernels/gemm.hpp"
#include "memory/caching_allocator.hpp"
#include "memory/tracking_allocator.hpp"
#include "nn/module.hpp"
#include "ops/ops.hpp"
#include "optim/optimizer.hpp"
#include "parallel/thread_pool.hpp"
#include "testkit/random.hpp"

namespace {

constexpr std::int64_t kBatch = 64, kIn = 784, kHidden = 128, kClasses = 10;

// The GEMMs of one step, as ops/matmul.cpp hands them to the kernel. Linear computes
// x W^T with W^T a transposed view, and its weight gradient as (G^T X), so the weight
// gradients read G transposed. The first layer's input gradient is never computed (the
// input needs none).
struct GemmShape {
    const char* name;
    std::int64_t M, N, K;
    bool ta, tb;
};
constexpr GemmShape kGemms[] = {
    {"fc1_forward", kBatch, kHidden, kIn, false, true},
    {"fc1_grad_weight", kHidden, kIn, kBatch, true, false},
    {"fc2_forward", kBatch, kClasses, kHidden, false, true},
    {"fc2_grad_input", kBatch, kHidden, kClasses, false, false},
    {"fc2_grad_weight", kClasses, kHidden, kBatch, true, false},
};

std::vector<float> floats(std::int64_t n, std::uint64_t seed) {
    return gl::testkit::random_floats(static_cast<std::size_t>(n), seed);
}

void set_calls(benchmark::State& state, double calls) { state.counters["calls"] = calls; }

void BM_Gemm(benchmark::State& state, GemmShape p) {
    const auto A = floats(p.M * p.K, 1), B = floats(p.K * p.N, 2);
    std::vector<float> C(static_cast<std::size_t>(p.M * p.N));
    const auto g = gl::kernels::dense_gemm_args(p.ta, p.tb, p.M, p.N, p.K, A.data(), B.data(), C.data());
    for (auto _ : state) {
        gl::kernels::gemm(g);  // through the registry, as matmul calls it
        benchmark::ClobberMemory();
    }
    const double flops = 2.0 * static_cast<double>(p.M * p.N * p.K);
    state.counters["GFLOP/s"] = benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
    set_calls(state, 1);
}

// ---- element-wise kernels, loss, optimizer (kernels/cpu/elementwise.hpp) ---------------

void BM_BiasAdd(benchmark::State& state, std::int64_t cols) {
    const auto a = floats(kBatch * cols, 1), bias = floats(cols, 2);
    std::vector<float> out(a.size());
    for (auto _ : state) gl::kernels::add_row(a.data(), bias.data(), out.data(), kBatch, cols);
    set_calls(state, 1);
}

void BM_Relu(benchmark::State& state) {
    const auto x = floats(kBatch * kHidden, 1);
    std::vector<float> y(x.size());
    for (auto _ : state) gl::kernels::relu(x.data(), y.data(), kBatch * kHidden);
    set_calls(state, 2);  // forward, and the mask of the backward is one more pass of the same size
}

void BM_BiasGrad(benchmark::State& state, std::int64_t cols) {
    const auto g = floats(kBatch * cols, 1);
    std::vector<double> sums(static_cast<std::size_t>(cols));
    for (auto _ : state) {
        std::fill(sums.begin(), sums.end(), 0.0);
        gl::kernels::sum_rows(g.data(), sums.data(), kBatch, cols);
        benchmark::ClobberMemory();
    }
    set_calls(state, 1);
}

void BM_LogSoftmax(benchmark::State& state) {
    const auto x = floats(kBatch * kClasses, 1);
    std::vector<float> y(x.size());
    for (auto _ : state) gl::kernels::log_softmax_rows(x.data(), y.data(), kBatch, kClasses);
    set_calls(state, 1);
}

void BM_Adam(benchmark::State& state) {
    const std::int64_t n = kIn * kHidden + kHidden + kHidden * kClasses + kClasses;
    auto p = floats(n, 1);
    const auto g = floats(n, 2);
    std::vector<float> m(p.size()), v(p.size());
    gl::kernels::AdamStep s;
    s.step_size = 1e-3f;
    for (auto _ : state) gl::kernels::adam_step(p.data(), g.data(), m.data(), v.data(), n, s);
    set_calls(state, 1);
}

// ---- the framework's own costs --------------------------------------------------------

// A tensor the size of the hidden activations: every op allocates its output.
void BM_Allocate(benchmark::State& state) {
    for (auto _ : state) benchmark::DoNotOptimize(gl::empty({kBatch, kHidden}));
    set_calls(state, 0);  // counted in the rest: how many a step makes is the ops' business
}

// Recording one node: the same add with and without a graph; the difference is recording.
void BM_AddOp(benchmark::State& state, bool record) {
    gl::Rng rng(0);
    gl::Tensor a = gl::randn({kBatch, kClasses}, rng), b = gl::randn({kBatch, kClasses}, rng);
    a.set_requires_grad(record);
    for (auto _ : state) benchmark::DoNotOptimize(gl::add(a, b));
    set_calls(state, 0);
}

void BM_GemmDispatch(benchmark::State& state) {
    for (auto _ : state) benchmark::DoNotOptimize(&gl::kernels::default_gemm());
    set_calls(state, 0);
}

void BM_PoolWakeUp(benchmark::State& state) {
    int sink[2] = {0, 0};
    for (auto _ : state) gl::parallel_run(2, [&](int t) { sink[t] += 1; });
    benchmark::DoNotOptimize(sink);
    set_calls(state, 0);
}

// ---- the whole step -------------------------------------------------------------------

// The whole step; with @p cached, every tensor comes from a caching allocator, so the
// step reuses the previous step's buffers instead of asking malloc (and the kernel, for
// the large ones) for fresh pages.
void BM_Step(benchmark::State& state, bool cached) {
    gl::memory::CachingAllocator cache;
    const gl::memory::DefaultAllocatorScope use(cached ? static_cast<gl::Allocator&>(cache) : gl::cpu_allocator());
    gl::Rng rng(0);
    auto net = gl::nn::make_simple_net(rng);
    gl::optim::Adam opt(net->parameters(), 1e-3);
    const gl::Tensor x = gl::randn({kBatch, kIn}, rng);
    gl::Tensor y = gl::empty({kBatch}, gl::DType::Int32);
    for (std::int64_t i = 0; i < kBatch; ++i) y.data<std::int32_t>()[i] = static_cast<std::int32_t>(i % kClasses);
    for (auto _ : state) {
        opt.zero_grad();
        const gl::Tensor loss = gl::cross_entropy((*net)(x), y);
        loss.backward();
        opt.step();
        benchmark::DoNotOptimize(loss.item());
    }
    set_calls(state, cached ? 0 : 1);
}

template <class F>
void add(const std::string& name, F&& fn) {
    benchmark::RegisterBenchmark(name.c_str(), std::forward<F>(fn))->UseRealTime()->Unit(benchmark::kMicrosecond);
}

// Takes --gemm=NAME and --threads=N out of argv (Google Benchmark rejects flags it does
// not know).
void take_own_flags(int& argc, char** argv, std::string& gemm, int& threads) {
    int kept = 1;
    for (int i = 1; i < argc; ++i) {
        if (std::strncmp(argv[i], "--gemm=", 7) == 0) gemm = argv[i] + 7;
        else if (std::strncmp(argv[i], "--threads=", 10) == 0) threads = std::stoi(argv[i] + 10);
        else argv[kept++] = argv[i];
    }
    argc = kept;
}

}  // namespace

int main(int argc, char** argv) {
    std::string gemm = gl::kernels::default_gemm().name;
    int threads = 2;
    take_own_flags(argc, argv, gemm, threads);
    gl::kernels::set_default_gemm(gemm);  // says why, and stops, if the kernel cannot run here
    gl::set_num_threads(threads);
    benchmark::Initialize(&argc, argv);
    benchmark::AddCustomContext("gemm", gemm);
    benchmark::AddCustomContext("threads", std::to_string(threads));
    for (const GemmShape& p : kGemms)
        add(std::string("gemm/") + p.name + "/" + std::to_string(p.M) + "x" + std::to_string(p.N) + "x" +
                std::to_string(p.K),
            [p](benchmark::State& s) { BM_Gemm(s, p); });
    add("elementwise/bias_add/fc1", [](benchmark::State& s) { BM_BiasAdd(s, kHidden); });
    add("elementwise/bias_add/fc2", [](benchmark::State& s) { BM_BiasAdd(s, kClasses); });
    add("elementwise/relu_and_mask", BM_Relu);
    add("elementwise/bias_grad/fc1", [](benchmark::State& s) { BM_BiasGrad(s, kHidden); });
    add("elementwise/bias_grad/fc2", [](benchmark::State& s) { BM_BiasGrad(s, kClasses); });
    add("loss/log_softmax", BM_LogSoftmax);
    add("optimizer/adam", BM_Adam);
    add("overhead/allocate_64x128", BM_Allocate);
    add("overhead/add_op_no_graph", [](benchmark::State& s) { BM_AddOp(s, false); });
    add("overhead/add_op_recorded", [](benchmark::State& s) { BM_AddOp(s, true); });
    add("overhead/gemm_dispatch", BM_GemmDispatch);
    add("overhead/pool_wake_up", BM_PoolWakeUp);
    add("step/whole", [](benchmark::State& s) { BM_Step(s, false); });
    add("overhead/step_with_caching_allocator", [](benchmark::State& s) { BM_Step(s, true); });
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}
