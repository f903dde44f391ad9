// GEMM benchmark: every registered kernel (ours and the peer libraries) on square
// problems N = 64..2048 and on the SimpleNet training-step shapes (batch 64), on 1 and 2
// threads, with GFLOP/s and % of this machine's FP32 FMA peak measured at start-up.
//
// Run:   build/bench/bench_gemm --benchmark_format=json --benchmark_out=gemm.json
// Quick: build/bench/bench_gemm --benchmark_filter='/1024/' --benchmark_min_time=0.2
// The slow teaching kernels stop early (naive at 512, reordered and blocked at 1024):
// naive at 2048 would take a minute per run and teaches nothing new.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <string>
#include <vector>

#include "base/rng.hpp"
#include "hw/probes.hpp"
#include "kernels/cpu/peers/peers.hpp"
#include "kernels/gemm.hpp"
#include "parallel/thread_pool.hpp"
#include "testkit/aligned.hpp"
#include "testkit/random.hpp"
#include "warm_up.hpp"

namespace {

struct Shape {
    std::string name;  // "square" or the SimpleNet GEMM it is
    std::int64_t M, N, K;
    bool ta, tb;
};

std::vector<Shape> shapes() {
    std::vector<Shape> s;
    for (std::int64_t n = 64; n <= 2048; n *= 2) s.push_back({"square", n, n, n, false, false});
    // SimpleNet 784-128-10 at batch 64: y = x W^T forward, dW = g^T x ... as matmul runs them
    // (the weight gradients in the weight's own layout: M = output features, A = g read
    // transposed; bench_step_breakdown times the same five).
    s.push_back({"fc1_forward", 64, 128, 784, false, true});
    s.push_back({"fc1_grad_weight", 128, 784, 64, true, false});
    s.push_back({"fc2_forward", 64, 10, 128, false, true});
    s.push_back({"fc2_grad_input", 64, 128, 10, false, false});
    s.push_back({"fc2_grad_weight", 10, 128, 64, true, false});
    // The CNN's first fully connected layer (3136 -> 128, batch 64), the same three GEMMs.
    s.push_back({"cnn_fc1_forward", 64, 128, 3136, false, true});
    s.push_back({"cnn_fc1_grad_input", 64, 3136, 128, false, false});
    s.push_back({"cnn_fc1_grad_weight", 128, 3136, 64, true, false});
    return s;
}

std::int64_t max_square(const std::string& kernel) {
    if (kernel == "naive") return 512;
    if (kernel == "reordered" || kernel == "blocked") return 1024;
    return 2048;
}

double g_peak[3] = {0, 0, 0};  // measured FP32 peak GFLOP/s for 1 and 2 threads

void run_gemm(benchmark::State& state, const gl::kernels::GemmKernel& kernel, const Shape& p, int threads) {
    gl::set_num_threads(threads);
    // Operands aligned like a tensor's storage (testkit/aligned.hpp says why it matters).
    const auto A = gl::testkit::aligned(gl::testkit::random_floats(static_cast<std::size_t>(p.M * p.K), 1));
    const auto B = gl::testkit::aligned(gl::testkit::random_floats(static_cast<std::size_t>(p.K * p.N), 2));
    gl::testkit::AlignedVector<float> C(static_cast<std::size_t>(p.M * p.N));
    const auto g = gl::kernels::dense_gemm_args(p.ta, p.tb, p.M, p.N, p.K, A.data(), B.data(), C.data());
    gl::bench::warm_up([&] { kernel.sgemm(g); });  // bench/warm_up.hpp says why
    for (auto _ : state) {
        kernel.sgemm(g);
        benchmark::ClobberMemory();
    }
    const double flops = 2.0 * static_cast<double>(p.M) * static_cast<double>(p.N) * static_cast<double>(p.K);
    state.counters["GFLOP/s"] = benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
    // GFLOP/s divided by the peak, as a rate too: Google Benchmark divides by the time.
    state.counters["%peak"] = benchmark::Counter(flops * 1e-9 / g_peak[threads] * 100.0,
                                                 benchmark::Counter::kIsIterationInvariantRate);
    state.counters["peak_GFLOP/s"] = g_peak[threads];
    state.counters["M"] = static_cast<double>(p.M);
    state.counters["N"] = static_cast<double>(p.N);
    state.counters["K"] = static_cast<double>(p.K);
    state.counters["threads"] = threads;
    state.SetLabel(p.name);
}

}  // namespace

int main(int argc, char** argv) {
    benchmark::Initialize(&argc, argv);
    for (int t : {1, 2}) g_peak[t] = gl::hw::best_fp32_peak_gflops(t, 0.2);
    benchmark::AddCustomContext("fp32_peak_gflops_1_thread", std::to_string(g_peak[1]));
    benchmark::AddCustomContext("fp32_peak_gflops_2_threads", std::to_string(g_peak[2]));
    // Which OpenBLAS kernels the "openblas" rows ran (tools/peers/openblas_core.py).
    benchmark::AddCustomContext("openblas_core", gl::kernels::openblas_core());
    for (const auto& kernel : gl::kernels::gemm_kernels()) {
        // CPU kernels only: the CUDA family has its own benchmarks (cuda_cpu_gemm_bench,
        // cuda_gemm_gpu_bench).
        if (kernel.name.rfind("cuda", 0) == 0 || !gl::kernels::why_unavailable(kernel).empty()) continue;
        for (const Shape& p : shapes()) {
            if (p.name == "square" && p.M > max_square(kernel.name)) continue;
            for (int t : {1, 2}) {
                const std::string name = "gemm/" + kernel.name + "/" + p.name + "/" + std::to_string(p.M) + "x" +
                                         std::to_string(p.N) + "x" + std::to_string(p.K) + "/threads:" +
                                         std::to_string(t) + "/";
                benchmark::RegisterBenchmark(name.c_str(), [kernel, p, t](benchmark::State& s) { run_gemm(s, kernel, p, t); })
                    ->UseRealTime()
                    ->Unit(benchmark::kMicrosecond);
            }
        }
    }
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}
