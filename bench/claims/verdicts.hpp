// The verdicts of the claims report as pure functions of what was measured. The
// experiments (claims_lNN.cpp) measure and fill the structs below; the functions here
// decide, and tests/claims/test_verdicts.cpp feeds them made-up measurements that must
// flip each verdict. Nothing here times, allocates big buffers or reads the machine.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "claims.hpp"

namespace gl::claims {

/// A verdict and the sentence that says how it follows from the numbers.
struct Judgement {
    Verdict verdict = Verdict::NotRun;
    std::string why;
};

// ---- Sanity bounds and load ------------------------------------------------------------

/// How far a timed reading may pass a physical ceiling before it is called suspect: run
/// to run noise of a timer on a shared machine (a probe that landed in a slow moment reads
/// the ceiling low). Beyond it the measurement, not the hardware, is wrong.
inline constexpr double kCeilingNoise = 0.15;

/// True when @p measured exceeds @p ceiling by more than @p noise (a fraction of it).
bool above_ceiling(double measured, double ceiling, double noise = kCeilingNoise);

/// True when a timed claim ran while other work competed for the cores: the 1-minute
/// load average before it, or after it less the claim's own threads (up to one per core),
/// was above the number of cores.
bool under_load(double load_before, double load_after, int cores);

/// The thread counts CPU-2 measures on @p cores CPUs: 1, 2, ..., cores, then 2 x cores.
std::vector<int> thread_counts(int cores);

// ---- CPU-1 -------------------------------------------------------------------------------

/// One GEMM kernel's reading: GFLOP/s on @c threads threads; @c peer for Eigen, OpenBLAS, oneDNN.
struct GemmReading {
    std::string name;
    int threads = 1;
    double gflops = 0.0;
    bool peer = false;
};

struct Cpu1Measured {
    double peak_1thread = 0.0;   ///< measured FP32 FMA peak, GFLOP/s, one thread
    double peak_all = 0.0;       ///< the same on @c threads threads
    int threads = 1;             ///< every core
    std::vector<GemmReading> kernels;
};
/// Reproduced when naive loops reach < 10% of peak and our best kernel on every core >= 50%;
/// suspect when any kernel reads above the peak of its thread count by more than the noise.
Judgement judge_cpu1(const Cpu1Measured& m);

// ---- CPU-2 -------------------------------------------------------------------------------

struct ThreadReading {
    int threads = 1;
    double gflops = 0.0;
};
/// Reproduced when the speed-up on @p cores threads is >= 80% of linear and no count
/// beyond the cores beats it by more than 10%; suspect when a count's speed-up exceeds the
/// cores it can use (min(threads, cores)) by more than the noise.
Judgement judge_cpu2(const std::vector<ThreadReading>& readings, int cores);

// ---- MEM-1 -------------------------------------------------------------------------------

struct BandwidthReading {
    std::string name;
    double gbs = 0.0;             ///< bytes moved per second (write-allocate included), GB/s
    double flops_per_byte = 0.0;  ///< flops per byte moved
    /// The kernel's bytes moved per second over those of a STREAM loop with the same
    /// traffic (arrays read, updated, written) measured beside it: median over rounds.
    double of_twin = 0.0;
};
struct Mem1Measured {
    double peak_gflops = 0.0;
    double triad_gbs = 0.0;      ///< STREAM triad in bytes moved (write-allocate included): the roofline's bandwidth
    std::vector<BandwidthReading> elementwise;
    double gemm_gflops = 0.0;
    double gemm_flops_per_byte = 0.0;
};
/// Reproduced when every element-wise kernel is far below peak by the roofline (its
/// flops per byte at most half the triad's ridge point, so at the bandwidth roof it could
/// use at most half the peak) and reaches >= 70% of its same-traffic STREAM loop, and GEMM
/// is compute-bound at >= 50% of peak; suspect when a kernel beats its same-traffic
/// STREAM loop by more than 10%, or GEMM the peak by more than the noise. (A kernel is
/// held to the loop with its own traffic, not to the triad: how many bytes per second
/// memory moves depends on the mix of reads and writes, see Lab 04's README.)
Judgement judge_mem1(const Mem1Measured& m);

// ---- MEM-3 -------------------------------------------------------------------------------

/// The lecture's figures: a CPU socket ~50 GB/s, an A100 ~900 GB/s.
inline constexpr double kLectureCpuGbs = 50.0, kLectureGpuGbs = 900.0;

struct Mem3Measured {
    double cpu_triad_gbs = 0.0;
    int cpu_threads = 1;
    std::optional<double> gpu_gbs;   ///< device-to-device copy bandwidth, when a GPU was there
    std::string gpu_name;            ///< or, without one, why not
};
/// The CPU half holds when the triad is within 2x of ~50 GB/s; the GPU half when the
/// device reaches >= half of ~900 GB/s and >= 10x the CPU. Both measured: reproduced when
/// both hold. Without a GPU: "needs a GPU" when the CPU half holds, not reproduced when it
/// does not (the missing half cannot rescue it). Suspect when a device reads above 10 TB/s
/// or the CPU above 1 TB/s (no DRAM of either kind is that fast).
Judgement judge_mem3(const Mem3Measured& m);

// ---- FP-6 --------------------------------------------------------------------------------

struct Fp6Measured {
    double axpy_speedup = 0.0;     ///< FP32 time / FP16-storage time, beyond the caches
    double relu_speedup = 0.0;
    double gemm_ratio = 0.0;       ///< best 16-bit GEMM / best FP32 GEMM (the lower of the sizes)
    double gemm_ceiling = 2.0;     ///< what the 16-bit kernel's instructions allow over FP32 FMA
    std::string best32, best16;    ///< the kernels compared
};
/// Reproduced when the bandwidth-bound axpy gains >= 1.6x and the GEMM >= 2x. Suspect when
/// an element-wise kernel passes 2x (half the bytes cannot be more than twice as fast) or
/// the GEMM passes its instruction ceiling, by more than the noise.
Judgement judge_fp6(const Fp6Measured& m);

/// The most a 16-bit GEMM kernel's instructions can do over an FP32 FMA kernel of the same
/// vector width: AMX tiles 16x, every other CPU path (vdpbf16ps, AVX512-FP16) 2x.
double lowp_gemm_ceiling(const std::string& kernel_name);

// ---- DP-2 --------------------------------------------------------------------------------

struct Dp2Measured {
    bool bytes_match = false;                ///< counted bytes == 2(N-1)/N formulas, every N
    double thread_ring_s = 0.0;              ///< thread transport, N workers, big buffer
    double thread_reduce_broadcast_s = 0.0;  ///< the same transport and size, master algorithm
    int thread_workers = 2;
    std::optional<double> mpi_ring_s;        ///< our ring over MPI (2 processes)
    std::optional<double> mpi_library_s;     ///< MPI_Allreduce, same processes and size
    double model_median_error = 0.0;         ///< the fitted cost model against its samples
    double model_ring_growth = 0.0;          ///< modelled ring time at 1024 workers / at 2
    double model_master_growth = 0.0;        ///< the same for reduce+broadcast
};
/// The bytes decide the "2(N-1)/N per worker" half. The time comparisons are on one
/// transport each: the ring must beat reduce+broadcast on threads at > 2 workers and be
/// within 1.25x of MPI_Allreduce over MPI. "Independent of N" is checked on the fitted
/// model (ring time at 1024 workers within 2x of 2 workers, the master's over 100x), and
/// only counts when the fit's median error is <= 25%; a worse fit is reported as such.
Judgement judge_dp2(const Dp2Measured& m);

// ---- The other timed claims ----------------------------------------------------------------

/// GEMM-1: reproduced when GEMM takes >= half of a training step with the fast kernel.
/// Suspect when a time share is above 1 (the timer counted something twice).
Judgement judge_gemm1(double gemm_time_share, double naive_gemm_time_share, double gemm_flop_share);

/// GPU-1: the best GPU GEMM over the best CPU GEMM; reproduced at >= 10x, "needs a GPU"
/// without a GPU figure (@p gpu_gflops empty).
Judgement judge_gpu1(double best_cpu_gflops, std::optional<double> gpu_gflops);

/// MEM-2: pointer-chasing latency, ns, in each level's working set.
struct LatencyLadder {
    double l1 = 0.0, l2 = 0.0, l3 = 0.0, dram = 0.0;
};
/// Reproduced when each level is >= 1.5x slower than the one above; suspect when an L1
/// hit reads under 0.2 ns (a dependent load takes at least a cycle, < 5 GHz).
Judgement judge_mem2(const LatencyLadder& ns);

/// CKPT-2 with sqrt(n) segments: reproduced when the gradients are bit-identical, the saved
/// activations drop by >= 60% and the step takes <= 40% longer. Suspect when more than all
/// of the activations were saved (> 100%).
Judgement judge_ckpt2(bool gradients_identical, double activations_saved_pct, double extra_step_time_pct);

/// CKPT-3: reproduced when caching makes a step's allocations >= 1.5x cheaper than fresh
/// pages with no request missing the cache.
Judgement judge_ckpt3(double speedup_over_fresh, std::uint64_t cache_misses);

/// DP-1 at one worker count: step times and the bytes the DP master and a DDP worker move.
struct DpVsDdp {
    int workers = 2;
    double dp_seconds = 0.0, ddp_seconds = 0.0;
    std::uint64_t dp_master_bytes = 0, ddp_worker_bytes = 0;
};
/// Reproduced when DDP's step is faster at every count and, beyond 2 workers (where both
/// move the same), the master moves more bytes than a DDP worker.
Judgement judge_dp1(const std::vector<DpVsDdp>& runs);

/// DP-5: throughput (samples/s) and peak step memory (bytes) at growing batch sizes.
struct BatchReading {
    std::int64_t batch = 0;
    double samples_per_second = 0.0, peak_bytes = 0.0;
};
/// Reproduced when the best throughput is >= 1.5x the smallest batch's and the memory per
/// extra sample between the two largest batches is within 20% of that between the two
/// smallest (linear). Needs >= 4 readings in increasing batch order.
Judgement judge_dp5(const std::vector<BatchReading>& readings);

// ---- The claims checked by exact counts ---------------------------------------------------

/// FW-1: reproduced when every op's gradient check passes and the data-dependent net's loss
/// at least halved while its depth varied.
Judgement judge_fw1(int gradchecks_passed, int gradchecks, double first_loss, double last_loss, bool depth_varied);

/// FW-2: reproduced at a final test accuracy >= 0.87; suspect outside [0, 1].
Judgement judge_fw2(double final_accuracy, int epochs);

/// GPU-2 (counted on the CUDA-on-CPU runtime): tiling cuts global loads by exactly the tile
/// factor, coalescing cuts sectors per request for loads and stores, no bank conflicts.
struct Gpu2Counts {
    double load_ratio = 0.0;        ///< coalesced kernel's global-load bytes / tiled kernel's
    int tile = 32;
    double naive_load_sectors = 0.0, coalesced_load_sectors = 0.0;    ///< per request
    double naive_store_sectors = 0.0, coalesced_store_sectors = 0.0;  ///< per request
    std::uint64_t bank_conflicts = 0;
};
Judgement judge_gpu2(const Gpu2Counts& c);

/// FP-2: gradient values lost (zero or subnormal in FP16) without and with loss scaling;
/// reproduced when some underflow to zero without scaling and scaling cuts the lost values
/// at least tenfold.
Judgement judge_fp2(std::uint64_t zero_unscaled, double lost_unscaled, double lost_scaled, double nonzero);

/// FP-3: the fraction of updates that vanished with FP16 weights and with FP32 masters;
/// reproduced when >= 1% vanish in FP16 and >= 10x as many as with masters.
Judgement judge_fp3(double vanished_fp16, double vanished_master);

/// FP-4: final test accuracies; reproduced when mixed precision (FP16 + scaling + masters)
/// and BF16 are both within 1 point of FP32.
Judgement judge_fp4(double fp32, double mixed, double bf16, double fp16_unscaled);

/// FP-5: relative error of FP16-accumulated sums at the smallest and largest K, and of
/// FP32-accumulated at the largest; reproduced when FP16 is > 100x FP32's and grew > 10x.
Judgement judge_fp5(double fp16_first, double fp16_last, double fp32_last);

/// DP-3: largest weight difference DDP vs one process, and largest gradient difference of
/// accumulated micro-batches vs one batch; reproduced when both are below @p tolerance.
Judgement judge_dp3(double ddp_difference, double accumulation_difference, double tolerance);

/// FP-1: reproduced when every one of the 65,536 patterns converts bit-exactly (against
/// Eigen, F16C where present, and round trips) and BF16 keeps FP32's range.
Judgement judge_fp1(bool every_pattern_exact, bool bf16_keeps_range);

/// CKPT-1: the memory accounting holds (weights fixed in the batch, activations linear in
/// it, the estimator equal to the allocator's count) and for ResNet-50 at batch 32 the
/// saved activations are > 2x the weight-related memory, with one output per layer near
/// the lecture's ~1.5 GB (0.75-3 GB).
struct Ckpt1Measured {
    bool weights_fixed = false, activations_linear = false, estimator_exact = false;
    double resnet_saved_bytes = 0.0, resnet_output_bytes = 0.0, resnet_weight_bytes = 0.0;
};
Judgement judge_ckpt1(const Ckpt1Measured& m);

/// DP-4: reproduced when every worker count split the data evenly, covered every sample
/// (padding fewer than N) and each epoch was shuffled differently.
Judgement judge_dp4(bool even_and_complete, bool reshuffled);

}  // namespace gl::claims
