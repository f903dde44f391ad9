// The CUDA SGEMM family on the CPU runtime, and what the runtime's fibers cost.
//
//   build/bench/cuda_cpu_gemm_bench [--benchmark_format=json]
//
// Times on the CPU runtime measure the runtime, not a GPU: a barrier costs two fiber
// switches per thread, so tiled versions pay for their __syncthreads here while on a GPU
// they are the fast ones. What carries over from CPU to GPU are the counted memory
// accesses (tests/cuda_cpu/test_cuda_gemm.cpp), not these times.
#include <benchmark/benchmark.h>

#include <vector>

#include "base/rng.hpp"
#include "cuda_cpu/cuda_compat.hpp"
#include "kernels/cuda/sgemm.hpp"
#include "testkit/random.hpp"

namespace {

using gl::testkit::random_floats;

void BM_CudaCpuSgemm(benchmark::State& state) {
    const int version = static_cast<int>(state.range(0));
    const int n = static_cast<int>(state.range(1));
    const auto A = random_floats(std::size_t(n) * n, 1), B = random_floats(std::size_t(n) * n, 2);
    std::vector<float> C(std::size_t(n) * n);
    gl::cuda::cpu::reset_runtime_stats();
    for (auto _ : state) {
        gl::kernels::cuda_gemm(version, n, n, n, A.data(), B.data(), C.data());
        benchmark::ClobberMemory();
    }
    const auto stats = gl::cuda::cpu::runtime_stats();
    state.SetLabel(gl::kernels::cuda_sgemm_versions()[std::size_t(version - 1)].name);
    state.counters["GFLOP/s"] = benchmark::Counter(2.0 * n * n * n, benchmark::Counter::kIsIterationInvariantRate,
                                                   benchmark::Counter::kIs1000);
    state.counters["switches/launch"] = double(stats.context_switches) / double(stats.launches);
    state.counters["workers"] = gl::cuda::cpu::workers();
}
BENCHMARK(BM_CudaCpuSgemm)
    ->ArgsProduct({{1, 2, 3, 4, 5, 6}, {128, 512}})
    ->ArgNames({"version", "n"})
    ->Unit(benchmark::kMillisecond)
    ->MeasureProcessCPUTime()  // the CPU column counts every worker thread: robust to a busy machine
    ->UseRealTime();

// Lazy fibers: a kernel without barriers runs its threads as plain calls. Compare with
// every thread on a fiber (lazy = 0), and with a kernel that does need its fibers.
__global__ void scale_add(int n, float a, const float* x, float* y) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}

__global__ void block_reverse(int n, const float* x, float* y) {
    __shared__ float s[256];
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    s[threadIdx.x] = i < n ? x[i] : 0.0f;
    __syncthreads();
    if (i < n) y[i] = s[blockDim.x - 1 - threadIdx.x];
}

void BM_ThreadCost(benchmark::State& state) {
    const bool lazy = state.range(0) != 0;
    const bool barrier = state.range(1) != 0;
    const int n = 1 << 20;
    std::vector<float> x(n, 1.0f), y(n, 2.0f);
    // One worker: the launching thread does all the work, so its CPU time is the cost, even
    // on a machine busy with other jobs.
    const int workers = gl::cuda::cpu::workers();
    gl::cuda::cpu::set_workers(1);
    gl::cuda::cpu::set_lazy_fibers(lazy);
    for (auto _ : state) {
        if (barrier)
            gl::cuda::launch(block_reverse, dim3(n / 256), dim3(256), 0, n, x.data(), y.data());
        else
            gl::cuda::launch(scale_add, dim3(n / 256), dim3(256), 0, n, 0.5f, x.data(), y.data());
        benchmark::ClobberMemory();
    }
    gl::cuda::cpu::set_lazy_fibers(true);
    gl::cuda::cpu::set_workers(workers);
    state.counters["ns/thread"] = benchmark::Counter(double(n) * 1e-9, benchmark::Counter::kIsIterationInvariantRate |
                                                                          benchmark::Counter::kInvert);
}
BENCHMARK(BM_ThreadCost)
    ->ArgsProduct({{1, 0}, {0, 1}})
    ->ArgNames({"lazy", "barrier"})
    ->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
