// The claims report's verdicts, decided from measurements alone (see verdicts.hpp).
#include "verdicts.hpp"

#include <algorithm>

namespace gl::claims {

bool above_ceiling(double measured, double ceiling) { return measured > ceiling * (1.0 + kCeilingNoise); }

bool under_load(double load_before, double load_after, int cores) {
    return std::max(load_before, load_after) > static_cast<double>(cores);
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
    double worst_bw = 1e30, worst_flops = 0.0;
    bool all_memory_bound = true;
    const double ridge = m.peak_gflops / m.triad_gbs;  // flop/byte where the two roofs meet
    for (const auto& k : m.elementwise) {
        if (above_ceiling(k.gbs, m.triad_gbs))
            return suspect(k.name + " moved " + fixed(k.gbs, 1) + " GB/s against STREAM's " + fixed(m.triad_gbs, 1));
        worst_bw = std::min(worst_bw, k.gbs / m.triad_gbs);
        worst_flops = std::max(worst_flops, k.gbs * k.flops_per_byte / m.peak_gflops);
        all_memory_bound = all_memory_bound && k.flops_per_byte < ridge;
    }
    if (above_ceiling(m.gemm_gflops, m.peak_gflops))
        return suspect("GEMM ran " + fixed(m.gemm_gflops, 1) + " GFLOP/s against a peak of " + fixed(m.peak_gflops, 1));
    const bool gemm_compute_bound = m.gemm_flops_per_byte >= ridge;
    const double gemm_share = m.gemm_gflops / m.peak_gflops;
    const bool ok = all_memory_bound && gemm_compute_bound && worst_bw >= 0.7 && worst_flops <= 0.2 && gemm_share >= 0.5;
    return {ok ? Verdict::Reproduced : Verdict::NotReproduced,
            "element-wise kernels reach at least " + fixed(100 * worst_bw, 0) + "% of STREAM bandwidth and at most " +
                fixed(100 * worst_flops, 1) + "% of peak FLOP/s; GEMM reaches " + fixed(100 * gemm_share, 0) +
                "% of peak; ridge point " + fixed(ridge, 1) + " flop/byte" +
                (ok ? ": the roofline holds" : " (expected >= 70% of STREAM, <= 20% of peak, GEMM >= 50%)")};
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
    bool mpi_ok = true;  // not measured: no evidence either way, said in the text
    if (m.mpi_ring_s && m.mpi_library_s) {
        mpi_ok = *m.mpi_ring_s <= 1.25 * *m.mpi_library_s;
        why += "; over MPI our ring took " + fixed(*m.mpi_ring_s / *m.mpi_library_s, 2) + "x MPI_Allreduce's time" +
               (mpi_ok ? "" : " (more than 1.25x)");
    } else {
        why += "; the MPI comparison was not measured";
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
    return {ok ? Verdict::Reproduced : Verdict::NotReproduced, why};
}

}  // namespace gl::claims
