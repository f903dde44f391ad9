// INT8 GEMM benchmark (claim Q-1): the INT8 paths this CPU runs and oneDNN's INT8 GEMM
// against the FP32 kernels (ours and the peers) in the same run, on square problems
// N = 256..2048 and on the MLP's layer shapes (batch 64 and 1000), 1 and 2 threads; and
// the whole MLP forward pass (SimpleNet 784-128-10, batch 1000) in FP32 and in INT8
// (quant::QuantizedMlp: input quantization, GEMMs with fused requantization, logits).
// The CNN of `train --model cnn` likewise: its layers' GEMM shapes (conv1 and conv2 through
// im2col, fc1 after the convolutions; 64 images) and its whole forward pass on 256 images
// (quant::QuantizedCnn). Our INT8 paths also run with the weights packed once
// (`_prepacked`), as a quantized layer packs them when it is built.
// INT8 work is counted as 2 M N K "operations" so GOP/s and GFLOP/s compare directly.
//
// Run:   build/bench/bench_int8 --benchmark_format=json --benchmark_out=int8.json
// Quick: build/bench/bench_int8 --benchmark_filter='/(1024|2048)x.*threads:2' --benchmark_min_time=0.3s
#include <benchmark/benchmark.h>

#include <random>
#include <string>
#include <vector>

#include "autograd/grad_mode.hpp"
#include "data/dataset.hpp"
#include "kernels/gemm.hpp"
#include "kernels/gemm_int8.hpp"
#include "nn/conv_layers.hpp"
#include "nn/module.hpp"
#include "parallel/thread_pool.hpp"
#include "quant/quantized_cnn.hpp"
#include "quant/quantized_mlp.hpp"
#include "testkit/aligned.hpp"
#include "testkit/random.hpp"
#include "warm_up.hpp"

namespace {

struct Shape {
    std::string name;
    std::int64_t M, N, K;
};

std::vector<Shape> shapes() {
    std::vector<Shape> s;
    for (std::int64_t n = 256; n <= 2048; n *= 2) s.push_back({"square", n, n, n});
    // SimpleNet 784-128-10 inference: y = x W^T (B is the weight [out, in], transposed).
    for (std::int64_t batch : {64, 1000}) {
        s.push_back({"fc1", batch, 128, 784});
        s.push_back({"fc2", batch, 10, 128});
    }
    // The CNN on 64 images: [pixels, 9] x [9, 32], [pixels, 288] x [288, 64], [64, 3136] x [3136, 128].
    s.push_back({"cnn_conv1", 64 * 28 * 28, 32, 9});
    s.push_back({"cnn_conv2", 64 * 14 * 14, 64, 288});
    s.push_back({"cnn_fc1", 64, 128, 3136});
    return s;
}

void counters(benchmark::State& state, const Shape& p, int threads, const std::string& unit) {
    const double ops = 2.0 * static_cast<double>(p.M) * static_cast<double>(p.N) * static_cast<double>(p.K);
    state.counters[unit] = benchmark::Counter(ops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
    state.counters["M"] = static_cast<double>(p.M);
    state.counters["N"] = static_cast<double>(p.N);
    state.counters["K"] = static_cast<double>(p.K);
    state.counters["threads"] = threads;
    state.SetLabel(p.name);
}

void run_int8(benchmark::State& state, const gl::kernels::Int8GemmKernel& kernel, const Shape& p, int threads,
              bool fused, bool prepacked = false) {
    gl::set_num_threads(threads);
    std::mt19937 gen(1);
    std::uniform_int_distribution<int> byte(0, 255);
    // Operands aligned like a tensor's storage (testkit/aligned.hpp says why it matters).
    gl::testkit::AlignedVector<std::uint8_t> A(static_cast<std::size_t>(p.M * p.K));
    gl::testkit::AlignedVector<std::int8_t> B(static_cast<std::size_t>(p.N * p.K));
    for (auto& a : A) a = static_cast<std::uint8_t>(byte(gen));
    for (auto& b : B) b = static_cast<std::int8_t>(byte(gen) - 128);
    gl::testkit::AlignedVector<std::int32_t> C(static_cast<std::size_t>(p.M * p.N));
    gl::testkit::AlignedVector<std::uint8_t> out(C.size());
    std::vector<std::int32_t> bias(static_cast<std::size_t>(p.N), 100);
    const gl::quant::FixedPointMultiplier m = gl::quant::to_fixed_point(1e-4);
    gl::kernels::Int8Requant rq{bias.data(), &m, false, 3, gl::quant::kUint8, out.data(), p.N};
    gl::kernels::Int8GemmArgs g{p.M, p.N, p.K, A.data(), p.K, 3, B.data(), p.K, true, 0, C.data(), p.N,
                                fused ? &rq : nullptr};
    const gl::kernels::Int8PackedB packed = gl::kernels::pack_int8_weights(kernel, g);
    if (prepacked) g.packed_b = &packed;
    gl::bench::warm_up([&] { kernel.fn(g); });  // bench/warm_up.hpp says why
    for (auto _ : state) {
        kernel.fn(g);
        benchmark::ClobberMemory();
    }
    counters(state, p, threads, "GOP/s");
}

void run_fp32(benchmark::State& state, const gl::kernels::GemmKernel& kernel, const Shape& p, int threads) {
    gl::set_num_threads(threads);
    const auto A = gl::testkit::aligned(gl::testkit::random_floats(static_cast<std::size_t>(p.M * p.K), 1));
    const auto B = gl::testkit::aligned(gl::testkit::random_floats(static_cast<std::size_t>(p.K * p.N), 2));
    gl::testkit::AlignedVector<float> C(static_cast<std::size_t>(p.M * p.N));
    const auto g = gl::kernels::dense_gemm_args(false, true, p.M, p.N, p.K, A.data(), B.data(), C.data());
    gl::bench::warm_up([&] { kernel.sgemm(g); });
    for (auto _ : state) {
        kernel.sgemm(g);
        benchmark::ClobberMemory();
    }
    counters(state, p, threads, "GOP/s");
}

// The MLP forward pass on a batch of 1000 images-shaped inputs in [0, 1): FP32, or the
// INT8 model calibrated (per channel, min/max) on the same inputs. The weights are
// untrained; the work per pass is the same as a trained model's.
void run_mlp(benchmark::State& state, bool int8, int threads) {
    gl::set_num_threads(threads);
    gl::Rng rng(1);
    auto net = gl::nn::make_simple_net(rng, 784, 128, 10);
    const gl::Tensor x = gl::rand_uniform({1000, 784}, 0.0, 1.0, rng);
    const gl::TensorDataset data(x, gl::zeros({1000}, gl::DType::Int32), 10);
    const gl::quant::QuantizedMlp q = gl::quant::quantize_mlp(*net, data, {});
    const gl::NoGradGuard no_grad;
    for (auto _ : state) benchmark::DoNotOptimize(int8 ? q.forward(x) : net->forward(x));
    state.counters["threads"] = threads;
    state.SetLabel("SimpleNet 784-128-10 forward, batch 1000");
}

// The CNN forward pass on 256 inputs in [0, 1): FP32, or INT8 calibrated (per channel,
// min/max) on them; untrained weights, the same work as trained ones.
void run_cnn(benchmark::State& state, bool int8, int threads) {
    gl::set_num_threads(threads);
    gl::Rng rng(1);
    auto net = gl::nn::make_cnn(rng);
    const gl::Tensor x = gl::rand_uniform({256, 784}, 0.0, 1.0, rng);
    const gl::TensorDataset data(x, gl::zeros({256}, gl::DType::Int32), 10);
    const gl::quant::QuantizedCnn q = gl::quant::quantize_cnn(*net, data, {});
    const gl::NoGradGuard no_grad;
    for (auto _ : state) benchmark::DoNotOptimize(int8 ? q.forward(x) : net->forward(x));
    state.counters["threads"] = threads;
    state.SetLabel("CNN (train --model cnn) forward, batch 256");
}

std::string name(const std::string& kernel, const Shape& p, int t) {
    return "int8/" + kernel + "/" + p.name + "/" + std::to_string(p.M) + "x" + std::to_string(p.N) + "x" +
           std::to_string(p.K) + "/threads:" + std::to_string(t) + "/";
}

void add(const std::string& n, std::function<void(benchmark::State&)> fn) {
    benchmark::RegisterBenchmark(n.c_str(), [fn](benchmark::State& s) { fn(s); })
        ->UseRealTime()
        ->Unit(benchmark::kMicrosecond);
}

}  // namespace

int main(int argc, char** argv) {
    benchmark::Initialize(&argc, argv);
    for (const Shape& p : shapes())
        for (int t : {1, 2}) {
            for (const auto& k : gl::kernels::int8_gemm_kernels()) {
                if (k.name == "int8_naive" || !k.available()) continue;
                add(name(k.name, p, t), [&k, p, t](benchmark::State& s) { run_int8(s, k, p, t, false); });
                if (!k.peer)  // the same kernel writing requantized UINT8 (bias, multiplier, clamp)
                    add(name(k.name + "_requant", p, t), [&k, p, t](benchmark::State& s) { run_int8(s, k, p, t, true); });
                if (k.pack_width > 0)  // the weights packed once, outside the timed loop
                    add(name(k.name + "_prepacked", p, t), [&k, p, t](benchmark::State& s) { run_int8(s, k, p, t, false, true); });
            }
            for (const char* fp32 : {"threaded", "balanced", "openblas", "onednn"}) {
                const gl::kernels::GemmKernel* k = nullptr;
                for (const auto& kk : gl::kernels::gemm_kernels())
                    if (kk.name == fp32) k = &gl::kernels::find_gemm(fp32);
                if (!k) continue;
                add(name(std::string("fp32_") + fp32, p, t), [k, p, t](benchmark::State& s) { run_fp32(s, *k, p, t); });
            }
        }
    for (int t : {1, 2})
        for (bool int8 : {false, true})
            add(std::string("mlp_forward/") + (int8 ? "int8" : "fp32") + "/batch:1000/threads:" + std::to_string(t) + "/",
                [int8, t](benchmark::State& s) { run_mlp(s, int8, t); });
    for (int t : {1, 2})
        for (bool int8 : {false, true})
            add(std::string("cnn_forward/") + (int8 ? "int8" : "fp32") + "/batch:256/threads:" + std::to_string(t) + "/",
                [int8, t](benchmark::State& s) { run_cnn(s, int8, t); });
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}
