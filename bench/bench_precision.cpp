// Lab 05 benchmarks (claim FP-6): FP32 against 16-bit storage and arithmetic.
//   BM_Gemm_fp32/<kernel>/N      every registered CPU FP32 GEMM kernel except the slow teaching ones
//   BM_Gemm_lowp/<kernel>/<type>/N  every low-precision kernel this CPU can run
//   BM_Axpy/<storage>/n          y = a x + y on FP32, FP16 and BF16 storage, in and beyond the caches
//   BM_Convert/<path>/n          float -> half conversion, portable integer code vs F16C
// Times are wall-clock (UseRealTime), so rates count what the memory system delivered.
// Kernels the CPU cannot run are not registered (the log says which). Run:
//   build/bench/bench_precision --benchmark_format=json --benchmark_out=precision.json
#include <benchmark/benchmark.h>

#include <iostream>
#include <vector>

#include "base/rng.hpp"
#include "kernels/cpu/elementwise.hpp"
#include "kernels/cpu/elementwise_lowp.hpp"
#include "kernels/gemm.hpp"
#include "kernels/gemm_lowp.hpp"
#include "numerics/convert.hpp"
#include "tensor/tensor.hpp"

namespace {

using gl::DType;

void set_gemm_counters(benchmark::State& state, std::int64_t n) {
    state.counters["GFLOP/s"] =
        benchmark::Counter(2.0 * static_cast<double>(n * n * n) * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

void BM_Gemm_fp32(benchmark::State& state, const gl::kernels::GemmKernel& kernel) {
    const std::int64_t n = state.range(0);
    gl::Rng rng(1);
    const gl::Tensor a = gl::rand_uniform({n, n}, -1, 1, rng), b = gl::rand_uniform({n, n}, -1, 1, rng);
    gl::Tensor c = gl::empty({n, n});
    gl::kernels::GemmArgs<float> g;
    g.M = g.N = g.K = n;
    g.A = a.data<float>();
    g.B = b.data<float>();
    g.C = c.data<float>();
    g.lda = g.ldb = g.ldc = n;
    for (auto _ : state) {
        kernel.sgemm(g);
        benchmark::ClobberMemory();
    }
    set_gemm_counters(state, n);
}

void BM_Gemm_lowp(benchmark::State& state, const gl::kernels::LowpGemmKernel& kernel, DType dtype) {
    const std::int64_t n = state.range(0);
    gl::Rng rng(1);
    const gl::Tensor a = gl::to_dtype(gl::rand_uniform({n, n}, -1, 1, rng), dtype);
    const gl::Tensor b = gl::to_dtype(gl::rand_uniform({n, n}, -1, 1, rng), dtype);
    gl::Tensor c = gl::empty({n, n});
    gl::kernels::LowpGemmArgs g;
    g.dtype = dtype;
    g.M = g.N = g.K = n;
    g.A = static_cast<const std::uint16_t*>(a.raw_data());
    g.B = static_cast<const std::uint16_t*>(b.raw_data());
    g.C = c.data<float>();
    g.lda = g.ldb = g.ldc = n;
    for (auto _ : state) {
        kernel.fn(g);
        benchmark::ClobberMemory();
    }
    set_gemm_counters(state, n);
}

void BM_Axpy(benchmark::State& state, DType storage) {
    const auto n = static_cast<std::size_t>(state.range(0));
    std::vector<float> x(n, 0.5f), y(n, 0.25f);
    std::vector<std::uint16_t> x16(n), y16(n);
    gl::numerics::from_float(storage == DType::Float32 ? DType::Float16 : storage, x.data(), x16.data(), n);
    gl::numerics::from_float(storage == DType::Float32 ? DType::Float16 : storage, y.data(), y16.data(), n);
    for (auto _ : state) {
        if (storage == DType::Float32) gl::kernels::axpy(1e-3f, x.data(), y.data(), static_cast<std::int64_t>(n));
        else if (storage == DType::Float16) gl::kernels::axpy_f16(n, 1e-3f, x16.data(), y16.data());
        else gl::kernels::axpy_bf16(n, 1e-3f, x16.data(), y16.data());
        benchmark::ClobberMemory();
    }
    const double bytes = 3.0 * static_cast<double>(n * gl::size_of(storage));  // read x, read y, write y
    state.counters["GB/s"] = benchmark::Counter(bytes * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
    state.counters["Gelem/s"] = benchmark::Counter(static_cast<double>(n) * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

void BM_Convert(benchmark::State& state, gl::numerics::ConvertPath path) {
    const auto n = static_cast<std::size_t>(state.range(0));
    std::vector<float> x(n, 0.3f);
    std::vector<std::uint16_t> h(n);
    for (auto _ : state) {
        gl::numerics::float_to_half(x.data(), h.data(), n, path);
        benchmark::ClobberMemory();
    }
    state.counters["Gelem/s"] = benchmark::Counter(static_cast<double>(n) * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

void register_all() {
    const std::vector<std::int64_t> sizes = {256, 512, 1024, 2048};
    for (const auto& k : gl::kernels::gemm_kernels()) {
        // CPU kernels only, and not the teaching versions that take minutes at N = 2048.
        if (k.name.rfind("cuda", 0) == 0 || k.name == "naive" || k.name == "reordered" || k.name == "blocked" ||
            !gl::kernels::why_unavailable(k).empty())
            continue;
        auto* b = benchmark::RegisterBenchmark(("BM_Gemm_fp32/" + k.name).c_str(), BM_Gemm_fp32, k);
        for (auto n : sizes) b->Arg(n);
        b->Unit(benchmark::kMillisecond)->UseRealTime();
    }
    for (const auto& k : gl::kernels::lowp_gemm_kernels()) {
        if (k.name == "lowp_naive") continue;
        if (!k.available()) {
            std::cerr << "bench_precision: skipping " << k.name << ": this CPU lacks " << k.needs << "\n";
            continue;
        }
        for (DType d : {DType::Float16, DType::BFloat16}) {
            if (!k.supports(d)) continue;
            auto* b = benchmark::RegisterBenchmark(("BM_Gemm_lowp/" + k.name + "/" + gl::name_of(d)).c_str(),
                                                   BM_Gemm_lowp, k, d);
            for (auto n : sizes) b->Arg(n);
            b->Unit(benchmark::kMillisecond)->UseRealTime();
        }
    }
    for (DType d : {DType::Float32, DType::Float16, DType::BFloat16})
        benchmark::RegisterBenchmark(("BM_Axpy/" + gl::name_of(d)).c_str(), BM_Axpy, d)
            ->Arg(1 << 16)     // 256 KiB of FP32 per array: in L2
            ->Arg(1 << 25)     // 128 MiB of FP32 per array: far beyond the 32 MiB L3
            ->Unit(benchmark::kMicrosecond)
            ->UseRealTime();
    for (auto path : {gl::numerics::ConvertPath::Portable, gl::numerics::ConvertPath::F16C})
        if (gl::numerics::available(path))
            benchmark::RegisterBenchmark(("BM_Convert/" + gl::numerics::name_of(path)).c_str(), BM_Convert, path)
                ->Arg(1 << 16)
                ->Unit(benchmark::kMicrosecond)
                ->UseRealTime();
}

}  // namespace

int main(int argc, char** argv) {
    benchmark::Initialize(&argc, argv);
    register_all();
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}
