// The claims report's verdicts, decided from measurements alone (see verdicts.hpp).
#include "verdicts.hpp"

#include <algorithm>
#include <cmath>

namespace gl::claims {

bool above_ceiling(double measured, double ceiling, double noise) { return measured > ceiling * (1.0 + noise); }

bool under_load(double load_before, double load_after, int cores) {
    // The load after a claim includes the claim's own threads, up to one per core.
    return std::max(load_before, load_after - cores) > static_cast<double>(cores);
}

std::vector<int> thread_counts(int cores) {
    std::vector<int> counts;
    for (int t = 1; t <= cores; ++t) counts.push_back(t);
    counts.push_back(2 * cores);
    return counts;
}

namespace {

// "suspect" overrides whatever the thresholds said: a reading above a physical ceiling
// says the timer, not the hardware, was measured.
Judgement suspect(const std::string& what) {
    return {Verdict::Suspect, what + ", above what the hardware can do: the measurement is wrong, not the claim"};
}

}  // namespace

// ---- CPU-1 -------------------------------------------------------------------------------

Judgement judge_cpu1(const Cpu1Measured& m) {
    double naive_pct = 100.0, best_ours = 0.0, best_peer = 0.0;
    std::string best_peer_name;
    for (const auto& k : m.kernels) {
        const double peak = k.threads == 1 ? m.peak_1thread : m.peak_all;
        if (above_ceiling(k.gflops, peak))
            return suspect(k.name + " read " + fixed(k.gflops, 1) + " GFLOP/s against a peak of " + fixed(peak, 1));
        if (k.name == "naive") naive_pct = 100.0 * k.gflops / peak;
        if (k.threads != m.threads) continue;
        if (k.peer && k.gflops > best_peer) best_peer = k.gflops, best_peer_name = k.name;
        if (!k.peer) best_ours = std::max(best_ours, k.gflops);
    }
    const double best_pct = 100.0 * best_ours / m.peak_all;
    const bool ok = naive_pct < 10.0 && best_pct >= 50.0;
    return {ok ? Verdict::Reproduced : Verdict::NotReproduced,
            "naive loops reach " + fixed(naive_pct, 1) + "% of peak, our best kernel on " + std::to_string(m.threads) +
                " threads " + fixed(best_pct, 0) + "%" +
                (best_peer > 0 ? " (" + fixed(best_ours / best_peer, 2) + "x " + best_peer_name + ")" : "") +
                (ok ? ": the optimizations close most of the gap" : ": expected naive < 10% and ours >= 50% of peak")};
}

// ---- CPU-2 -------------------------------------------------------------------------------

Judgement judge_cpu2(const std::vector<ThreadReading>& readings, int cores) {
    double one = 0.0, at_cores = 0.0, beyond = 0.0;
    for (const auto& r : readings) {
        if (r.threads == 1) one = r.gflops;
        if (r.threads == cores) at_cores = r.gflops;
        if (r.threads > cores) beyond = std::max(beyond, r.gflops);
    }
    if (one <= 0.0 || at_cores <= 0.0) return {Verdict::NotRun, "no reading at 1 thread or at the cores"};
    for (const auto& r : readings) {
        const double usable = std::min(r.threads, cores);
        if (above_ceiling(r.gflops / one, usable))
            return suspect(std::to_string(r.threads) + " threads ran " + fixed(r.gflops / one, 2) +
                           "x one thread on " + std::to_string(cores) + " cores");
    }
    const double speedup = at_cores / one, more = beyond / at_cores;
    const bool linear = speedup >= 0.8 * cores, flat = more <= 1.1;
    return {linear && flat ? Verdict::Reproduced : Verdict::NotReproduced,
            "speed-up " + fixed(speedup, 2) + "x on " + std::to_string(cores) + " cores (" +
                (linear ? "about linear" : "less than 80% of linear") + "), more threads than cores " +
                fixed(more, 2) + "x of that (" + (flat ? "no help" : "they helped") + ")"};
}

// ---- MEM-1 -------------------------------------------------------------------------------

Judgement judge_mem1(const Mem1Measured& m) {
    // A kernel and its twin make the same demands on memory, measured side by side, so the
    // margin is tighter than kCeilingNoise (which allows for a ceiling measured apart).
    constexpr double kTwinMargin = 0.10;
    double worst_bw = 1e30, worst_flops = 0.0;
    bool all_far_below_peak = true;
    const double ridge = m.peak_gflops / m.triad_gbs;  // flop/byte where the two roofs meet
    for (const auto& k : m.elementwise) {
        if (above_ceiling(k.of_twin, 1.0, kTwinMargin))
            return suspect(k.name + " moved bytes " + fixed(k.of_twin, 2) +
                           "x as fast as a STREAM loop with the same traffic: its byte count is too high");
        worst_bw = std::min(worst_bw, k.of_twin);
        worst_flops = std::max(worst_flops, k.gbs * k.flops_per_byte / m.peak_gflops);
        // Far below peak, judged by where the kernel sits on the roofline rather than by the
        // share of peak it reached: a threshold on that share fails a kernel for running
        // well (log-softmax, 10 flops in 12 bytes, reached 21% of peak on Zen 4 when memory
        // was quiet, at its bandwidth roof).
        all_far_below_peak = all_far_below_peak && k.flops_per_byte <= ridge / 2;
    }
    if (above_ceiling(m.gemm_gflops, m.peak_gflops))
        return suspect("GEMM ran " + fixed(m.gemm_gflops, 1) + " GFLOP/s against a peak of " + fixed(m.peak_gflops, 1));
    const bool gemm_compute_bound = m.gemm_flops_per_byte >= ridge;
    const double gemm_share = m.gemm_gflops / m.peak_gflops;
    const bool ok = all_far_below_peak && gemm_compute_bound && worst_bw >= 0.7 && gemm_share >= 0.5;
    return {ok ? Verdict::Reproduced : Verdict::NotReproduced,
            "element-wise kernels reach at least " + fixed(100 * worst_bw, 0) +
                "% of the bandwidth of a STREAM loop with their traffic and at most " + fixed(100 * worst_flops, 1) +
                "% of peak FLOP/s; GEMM reaches " + fixed(100 * gemm_share, 0) + "% of peak; ridge point " +
                fixed(ridge, 1) + " flop/byte" +
                (ok ? ": the roofline holds"
                    : " (expected >= 70% of a same-traffic STREAM loop, element-wise flops per byte at most half "
                      "the ridge point, GEMM >= 50% of peak)")};
}

// ---- MEM-3 -------------------------------------------------------------------------------

Judgement judge_mem3(const Mem3Measured& m) {
    if (m.cpu_triad_gbs > 1000.0) return suspect("the CPU triad read " + fixed(m.cpu_triad_gbs, 0) + " GB/s");
    if (m.gpu_gbs && *m.gpu_gbs > 10000.0) return suspect("the device copy read " + fixed(*m.gpu_gbs, 0) + " GB/s");
    const bool cpu_half = m.cpu_triad_gbs >= kLectureCpuGbs / 2 && m.cpu_triad_gbs <= kLectureCpuGbs * 2;
    const std::string cpu_text = "the CPU side measured " + fixed(m.cpu_triad_gbs, 1) + " GB/s on " +
                                 std::to_string(m.cpu_threads) + " threads, " +
                                 (cpu_half ? "within 2x of" : "NOT within 2x of") + " the lecture's ~50 GB/s";
    if (!m.gpu_gbs)
        return {cpu_half ? Verdict::NeedsGpu : Verdict::NotReproduced,
                cpu_text + "; the GPU half needs a GPU (" + m.gpu_name + ")"};
    const double ratio = *m.gpu_gbs / m.cpu_triad_gbs;
    const bool gpu_half = *m.gpu_gbs >= kLectureGpuGbs / 2 && ratio >= 10.0;
    return {cpu_half && gpu_half ? Verdict::Reproduced : Verdict::NotReproduced,
            cpu_text + "; " + m.gpu_name + " copies at " + fixed(*m.gpu_gbs, 0) + " GB/s, " + fixed(ratio, 0) +
                "x this CPU (" + (gpu_half ? "" : "NOT ") + "at least half of ~900 GB/s and 10x the CPU)"};
}

// ---- FP-6 --------------------------------------------------------------------------------

double lowp_gemm_ceiling(const std::string& kernel_name) {
    return kernel_name.find("amx") != std::string::npos ? 16.0 : 2.0;
}

Judgement judge_fp6(const Fp6Measured& m) {
    // Half the bytes: a bandwidth-bound kernel can at most double its speed.
    if (above_ceiling(m.axpy_speedup, 2.0)) return suspect("FP16-storage axpy ran " + fixed(m.axpy_speedup, 2) + "x FP32");
    if (above_ceiling(m.relu_speedup, 2.0)) return suspect("FP16-storage relu ran " + fixed(m.relu_speedup, 2) + "x FP32");
    if (above_ceiling(m.gemm_ratio, m.gemm_ceiling))
        return suspect(m.best16 + " ran " + fixed(m.gemm_ratio, 2) + "x " + m.best32 + " with a ceiling of " +
                       fixed(m.gemm_ceiling, 0) + "x");
    const bool bandwidth = m.axpy_speedup >= 1.6, gemm2x = m.gemm_ratio >= 2.0;
    return {bandwidth && gemm2x ? Verdict::Reproduced : Verdict::NotReproduced,
            "FP16-storage axpy is " + fixed(m.axpy_speedup, 2) + "x FP32 beyond the caches (" +
                (bandwidth ? ">= 1.6x: bandwidth-bound, half the bytes" : "< 1.6x") + "); the best 16-bit GEMM (" +
                m.best16 + ") is " + fixed(m.gemm_ratio, 2) + "x the best FP32 GEMM (" + m.best32 + "), " +
                (gemm2x ? ">= 2x" : "< 2x") + " with an instruction ceiling of " + fixed(m.gemm_ceiling, 0) + "x"};
}

// ---- DP-2 --------------------------------------------------------------------------------

Judgement judge_dp2(const Dp2Measured& m) {
    std::string why = m.bytes_match ? "the ring's per-worker bytes are 2(N-1)/N of the buffer, exactly, at every N"
                                    : "byte counters differ from the 2(N-1)/N formulas";
    const bool threads_ok = m.thread_ring_s <= m.thread_reduce_broadcast_s;
    why += "; on threads (" + std::to_string(m.thread_workers) + " workers) the ring took " +
           fixed(m.thread_ring_s / m.thread_reduce_broadcast_s, 2) + "x the time of reduce+broadcast";
    const bool mpi_measured = m.mpi_ring_s && m.mpi_library_s;
    bool mpi_ok = false;
    if (mpi_measured) {
        mpi_ok = *m.mpi_ring_s <= 1.25 * *m.mpi_library_s;
        why += "; over MPI our ring took " + fixed(*m.mpi_ring_s / *m.mpi_library_s, 2) + "x MPI_Allreduce's time" +
               (mpi_ok ? "" : " (more than 1.25x)");
    } else {
        why += "; the MPI comparison was not measured (a build without MPI?), so half of the claim is untested";
    }
    const bool fit_ok = m.model_median_error <= 0.25;
    const bool flat = m.model_ring_growth <= 2.0 && m.model_master_growth >= 100.0;
    if (!fit_ok)
        why += "; the cost model fits its samples poorly (median error " + fixed(100 * m.model_median_error, 0) +
               "% > 25%), so its extrapolation to 1024 workers is no evidence";
    else
        why += "; the fitted model (median error " + fixed(100 * m.model_median_error, 0) + "%) puts the ring at 1024 " +
               "workers at " + fixed(m.model_ring_growth, 2) + "x its time at 2, the master at " +
               fixed(m.model_master_growth, 0) + "x" + (flat ? ": independent of N" : ": NOT flat");
    const bool ok = m.bytes_match && threads_ok && mpi_ok && fit_ok && flat;
    if (!mpi_measured && m.bytes_match && threads_ok && fit_ok && flat) return {Verdict::NotRun, why};
    return {ok ? Verdict::Reproduced : Verdict::NotReproduced, why};
}

// ---- The other timed claims ----------------------------------------------------------------

Judgement judge_gemm1(double gemm_time_share, double naive_gemm_time_share, double gemm_flop_share) {
    if (gemm_time_share > 1.0 + kCeilingNoise || naive_gemm_time_share > 1.0 + kCeilingNoise)
        return suspect("GEMM's share of the step read " + fixed(100 * std::max(gemm_time_share, naive_gemm_time_share), 0) +
                       "%");
    if (gemm_time_share >= 0.5)
        return {Verdict::Reproduced, "GEMM takes " + fixed(100 * gemm_time_share, 0) +
                                         "% of the step even with the optimized kernel"};
    return {Verdict::NotReproduced,
            "GEMM is " + fixed(100 * gemm_flop_share, 1) + "% of the flops and takes " +
                fixed(100 * naive_gemm_time_share, 0) + "% of the time with naive loops, but only " +
                fixed(100 * gemm_time_share, 0) + "% once it runs near peak: the bandwidth-bound rest (element-wise "
                "ops, optimizer, autograd bookkeeping) is a large share, so the lecture's claim holds for "
                "unoptimized code and large layers"};
}

Judgement judge_gpu1(double best_cpu_gflops, std::optional<double> gpu_gflops) {
    if (!gpu_gflops)
        return {Verdict::NeedsGpu, "the GPU half of the comparison needs a CUDA device; the CPU half is " +
                                       fixed(best_cpu_gflops, 1) + " GFLOP/s, so the claim needs a GPU above " +
                                       fixed(10 * best_cpu_gflops / 1000, 1) + " TFLOP/s to hold here"};
    const double ratio = *gpu_gflops / best_cpu_gflops;
    return {ratio >= 10 ? Verdict::Reproduced : Verdict::NotReproduced,
            "the GPU ran " + fixed(ratio, 0) + "x the best CPU GEMM's GFLOP/s" +
                (ratio >= 10 ? " (>= 10: tens to hundreds)" : " (< 10)")};
}

Judgement judge_mem2(const LatencyLadder& ns) {
    if (ns.l1 < 0.2) return suspect("an L1 hit read " + fixed(ns.l1, 2) + " ns");
    const bool ok = ns.l1 * 1.5 < ns.l2 && ns.l2 * 1.5 < ns.l3 && ns.l3 * 1.5 < ns.dram;
    return {ok ? Verdict::Reproduced : Verdict::NotReproduced,
            "L1 " + fixed(ns.l1, 1) + " ns < L2 " + fixed(ns.l2, 1) + " ns < L3 " + fixed(ns.l3, 1) + " ns < DRAM " +
                fixed(ns.dram, 0) + " ns" +
                (ok ? ", each step at least 1.5x slower" : ": some step is less than 1.5x (noise or a small cache)")};
}

Judgement judge_ckpt2(bool gradients_identical, double activations_saved_pct, double extra_step_time_pct) {
    if (activations_saved_pct > 100.0) return suspect(fixed(activations_saved_pct, 1) + "% of the activations saved");
    const bool ok = gradients_identical && activations_saved_pct >= 60.0 && extra_step_time_pct <= 40.0;
    return {ok ? Verdict::Reproduced : Verdict::NotReproduced,
            "with sqrt(n) segments the peak of saved activations drops by " + fixed(activations_saved_pct, 1) +
                "% (lecture: ~60%, >= 60% needed) for " + fixed(extra_step_time_pct, 1) + "% more step time (" +
                (extra_step_time_pct <= 40.0 ? "within" : "above") + " the 40% bound)" +
                (gradients_identical ? "; gradients unchanged bit for bit" : "; GRADIENTS CHANGED")};
}

Judgement judge_ckpt3(double speedup_over_fresh, std::uint64_t cache_misses) {
    const bool ok = speedup_over_fresh >= 1.5 && cache_misses == 0;
    return {ok ? Verdict::Reproduced : Verdict::NotReproduced,
            "the caching allocator makes a step's allocations " + fixed(speedup_over_fresh, 1) +
                "x cheaper than fresh pages (>= 1.5x needed), " +
                (cache_misses == 0 ? "every request hit the cache"
                                   : std::to_string(cache_misses) + " requests missed the cache")};
}

Judgement judge_dp1(const std::vector<DpVsDdp>& runs) {
    bool faster = true, master_heavier = true;
    std::string ratios;
    for (const auto& r : runs) {
        faster = faster && r.dp_seconds > r.ddp_seconds;
        // At 2 workers both move two models' worth per step (2(N-1) = 2 * 2(N-1)/N); beyond, the master more.
        if (r.workers > 2) master_heavier = master_heavier && r.dp_master_bytes > r.ddp_worker_bytes;
        ratios += (ratios.empty() ? "" : ", ") + fixed(r.dp_seconds / r.ddp_seconds, 2) + "x at " +
                  std::to_string(r.workers);
    }
    return {faster && master_heavier ? Verdict::Reproduced : Verdict::NotReproduced,
            std::string(faster ? "DDP's step is faster at every worker count" : "DDP was NOT faster at every worker count") +
                " (DP/DDP " + ratios + ")" +
                (master_heavier ? "; beyond 2 workers the master moves 2(N-1) models per step, a DDP worker 2(N-1)/N"
                                : "; the master did not move more bytes than a DDP worker")};
}

Judgement judge_dp5(const std::vector<BatchReading>& r) {
    if (r.size() < 4) return {Verdict::NotRun, "fewer than 4 batch sizes measured"};
    double best = 0.0;
    for (const auto& b : r) best = std::max(best, b.samples_per_second);
    const double speedup = best / r.front().samples_per_second;
    const auto slope = [](const BatchReading& a, const BatchReading& b) {
        return (b.peak_bytes - a.peak_bytes) / static_cast<double>(b.batch - a.batch);
    };
    const std::size_t n = r.size();
    const bool linear = std::abs(slope(r[n - 2], r[n - 1]) / slope(r[0], r[1]) - 1.0) < 0.2;
    return {speedup >= 1.5 && linear ? Verdict::Reproduced : Verdict::NotReproduced,
            std::string(speedup >= 1.5 ? "throughput rises with the batch (" : "throughput did not rise by 1.5x (") +
                fixed(speedup, 2) + "x) and memory " + (linear ? "grows linearly" : "does NOT grow linearly") +
                " with it; running out of memory is extrapolated, not provoked"};
}

// ---- The claims checked by exact counts ---------------------------------------------------

Judgement judge_fw1(int gradchecks_passed, int gradchecks, double first_loss, double last_loss, bool depth_varied) {
    const bool grads_ok = gradchecks_passed == gradchecks;
    const bool toy_ok = last_loss < 0.5 * first_loss && depth_varied;
    return {grads_ok && toy_ok ? Verdict::Reproduced : Verdict::NotReproduced,
            std::string(grads_ok ? "every op's backward matches finite differences"
                                 : std::to_string(gradchecks - gradchecks_passed) + " op gradient checks failed") +
                (toy_ok ? " and the data-dependent graph trained (its loss at least halved)"
                        : "; the data-dependent network did not train (or never changed depth)")};
}

Judgement judge_fw2(double final_accuracy, int epochs) {
    if (final_accuracy < 0.0 || final_accuracy > 1.0) return suspect("an accuracy of " + fixed(final_accuracy, 4));
    const bool ok = final_accuracy >= 0.87;
    return {ok ? Verdict::Reproduced : Verdict::NotReproduced,
            "after " + std::to_string(epochs) + " epochs the test accuracy is " + fixed(final_accuracy, 4) +
                (ok ? " >= 0.87" : " < 0.87")};
}

Judgement judge_gpu2(const Gpu2Counts& c) {
    const bool tiling = std::fabs(c.load_ratio - c.tile) < 1e-9;
    const bool coalescing =
        c.coalesced_load_sectors < c.naive_load_sectors && c.coalesced_store_sectors < c.naive_store_sectors;
    if (tiling && coalescing && c.bank_conflicts == 0)
        return {Verdict::Reproduced, "tiling cut global loads by exactly the tile factor (" + fixed(c.load_ratio, 0) +
                                         " = " + std::to_string(c.tile) +
                                         ") without bank conflicts, and coalescing cut sectors per load request from " +
                                         fixed(c.naive_load_sectors, 1) + " to " + fixed(c.coalesced_load_sectors, 1) +
                                         " (exact counts)"};
    return {Verdict::NotReproduced,
            std::string(tiling ? "" : "the tiled/coalesced load ratio is " + fixed(c.load_ratio, 3) + ", not " +
                                          std::to_string(c.tile) + "; ") +
                (coalescing ? "" : "coalescing did not reduce sectors per request; ") +
                (c.bank_conflicts == 0 ? "" : "the tiled kernel had bank conflicts")};
}

Judgement judge_fp2(std::uint64_t zero_unscaled, double lost_unscaled, double lost_scaled, double nonzero) {
    const bool shows = zero_unscaled > 0 && lost_scaled * 10 <= lost_unscaled;
    return {shows ? Verdict::Reproduced : Verdict::NotReproduced,
            shows ? "small gradients do underflow in FP16 on this model, and loss scaling cuts the values lost to zero "
                    "or to subnormals at least tenfold"
                  : "the effect is too small to show here: lost values without scaling " +
                        fixed(100 * lost_unscaled / nonzero, 3) + "%, with " + fixed(100 * lost_scaled / nonzero, 3) + "%"};
}

Judgement judge_fp3(double vanished_fp16, double vanished_master) {
    const bool shows = vanished_fp16 >= 0.01 && vanished_fp16 >= 10 * vanished_master;
    return {shows ? Verdict::Reproduced : Verdict::NotReproduced,
            shows ? "with FP16 weights a sizeable share of updates (" + fixed(100 * vanished_fp16, 1) +
                        "%) is smaller than half an ulp and rounds away; FP32 masters keep (nearly) all of them"
                  : "with Adam (step ~ lr, whatever the gradient) few updates fall below half an FP16 ulp here: " +
                        fixed(100 * vanished_fp16, 2) + "% vs " + fixed(100 * vanished_master, 2) + "%"};
}

Judgement judge_fp4(double fp32, double mixed, double bf16, double fp16_unscaled) {
    const bool within = std::abs(mixed - fp32) <= 0.01 && std::abs(bf16 - fp32) <= 0.01;
    return {within ? Verdict::Reproduced : Verdict::NotReproduced,
            "fp16+scaling+master is " + fixed(100 * (mixed - fp32), 2) + " points and bf16 " +
                fixed(100 * (bf16 - fp32), 2) + " points from FP32 (" + (within ? "both within 1" : "not both within 1") +
                "); fp16 without scaling is " + fixed(100 * (fp16_unscaled - fp32), 2) + " points from FP32"};
}

Judgement judge_fp5(double fp16_first, double fp16_last, double fp32_last) {
    const bool shows = fp16_last > 100 * fp32_last && fp16_last > 10 * fp16_first;
    return {shows ? Verdict::Reproduced : Verdict::NotReproduced,
            "at the largest K FP16 accumulation is off by " + fixed(100 * fp16_last, 1) + "% (" +
                fixed(fp16_last / fp16_first, 0) + "x its error at the smallest K), FP32 by " +
                fixed(100 * fp32_last, 5) + "%" +
                (shows ? ": FP32 accumulation is what keeps tensor-core GEMMs accurate"
                       : ": expected FP16 > 100x FP32 and growing > 10x with K")};
}

Judgement judge_dp3(double ddp_difference, double accumulation_difference, double tolerance) {
    const bool ok = ddp_difference < tolerance && accumulation_difference < tolerance;
    return {ok ? Verdict::Reproduced : Verdict::NotReproduced,
            "both differences are " + std::string(ok ? "below" : "NOT below") + " the stated tolerance " +
                fixed(tolerance, 6) + " (float rounding: the sums are taken in another order)"};
}

Judgement judge_fp1(bool every_pattern_exact, bool bf16_keeps_range) {
    return {every_pattern_exact && bf16_keeps_range ? Verdict::Reproduced : Verdict::NotReproduced,
            std::string(bf16_keeps_range ? "BF16's min normal equals FP32's and its max is FP32's to 3 digits"
                                         : "BF16 does not keep FP32's range") +
                (every_pattern_exact ? "; every pattern converts bit-exactly" : "; some patterns disagree (see data)")};
}

Judgement judge_ckpt1(const Ckpt1Measured& m) {
    const bool dominates = m.resnet_saved_bytes > 2.0 * m.resnet_weight_bytes;
    const bool near_lecture = m.resnet_output_bytes > 0.75e9 && m.resnet_output_bytes < 3e9;
    const bool ok = m.weights_fixed && m.activations_linear && m.estimator_exact && dominates && near_lecture;
    return {ok ? Verdict::Reproduced : Verdict::NotReproduced,
            std::string(m.weights_fixed ? "weight memory does not change with batch; "
                                        : "weight memory changed with batch; ") +
                (m.activations_linear ? "saved activations grow exactly linearly with it; "
                                      : "saved activations are not linear in batch; ") +
                (m.estimator_exact ? "the shape-walking estimator equals the allocator's count exactly; "
                                   : "the estimator disagrees with the allocator; ") +
                "for ResNet-50 at batch 32 activations are " + fixed(m.resnet_saved_bytes / m.resnet_weight_bytes, 1) +
                "x the weight-related memory" + (dominates ? "" : " (not > 2x)") +
                ", and one output per layer is " + fixed(m.resnet_output_bytes / 1e9, 2) + " GB (lecture: ~1.5 GB" +
                (near_lecture ? ")" : "; NOT within 0.75-3 GB)")};
}

Judgement judge_dp4(bool even_and_complete, bool reshuffled) {
    return {even_and_complete && reshuffled ? Verdict::Reproduced : Verdict::NotReproduced,
            std::string(even_and_complete ? "every worker gets the same number of samples and every sample is visited "
                                            "once per epoch (the padding repeats fewer than N samples)"
                                          : "the split is uneven or misses samples") +
                (reshuffled ? "" : "; epochs repeat the same order")};
}

}  // namespace gl::claims
