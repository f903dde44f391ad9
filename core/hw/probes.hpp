/// @file
/// @brief Machine probes for the roofline and the memory hierarchy: peak FMA throughput,
/// STREAM bandwidth and pointer-chasing latency, each a small readable program.
///
/// Owns: measuring what the hardware can do, so kernels can be placed against it (% of
/// peak, % of bandwidth). Knows nothing about tensors or the kernels it is compared with.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace gl::hw {

/// Vector widths an FMA probe can use; each needs its instruction set (SSE2+FMA is not a
/// thing: the 128-bit probe uses FMA3 on xmm registers, so it needs FMA too).
enum class VectorWidth { Bits128, Bits256, Bits512 };

/// "128-bit", "256-bit", "512-bit".
std::string to_string(VectorWidth w);

/// The widths this CPU can run FMAs at (empty without FMA3).
std::vector<VectorWidth> fma_widths();

/// Independent FMA chains in each thread's loop of the peak probe (enough to hide the
/// FMA latency): every iteration of the loop is kFmaChains FMAs.
constexpr int kFmaChains = 12;

/// One peak measurement.
struct PeakResult {
    VectorWidth width = VectorWidth::Bits256;  ///< vector width used
    bool fp64 = false;                         ///< double (true) or float precision
    int threads = 1;                           ///< threads that ran it, each on its own CPU
    double gflops = 0.0;                       ///< billions of floating-point operations per second, all threads
    double seconds = 0.0;                      ///< wall time of the timed run
    std::int64_t iterations = 0;               ///< iterations of the FMA loop each thread ran in it
};

/// Peak FMA throughput: every thread runs independent chains of fused multiply-adds
/// (enough of them to hide the FMA latency) for about @p seconds; 2 flops per lane per FMA.
PeakResult fma_peak(VectorWidth width, bool fp64, int threads, double seconds = 0.1);

/// The best FP32 peak over the widths this CPU has, on @p threads threads (GFLOP/s).
double best_fp32_peak_gflops(int threads, double seconds = 0.1);

/// One STREAM measurement (bytes counted as STREAM does: each array read or written once,
/// no write-allocate traffic). With ordinary stores the CPU first reads each line it
/// writes into the cache (write-allocate), so a triad really moves 4 arrays' worth for
/// the 3 counted; with non-temporal stores it moves the 3 counted.
struct StreamResult {
    std::string kernel;        ///< "copy" or "triad"
    std::int64_t bytes = 0;    ///< bytes moved per pass
    int threads = 1;           ///< threads used
    double gbs = 0.0;          ///< best pass, GB/s (10^9 bytes per second)
};

/// The memory traffic of a streaming kernel, per element: how many arrays it only reads,
/// how many it reads and writes back in place, and how many it only writes. relu is
/// {1, 0, 1}, the triad and add {2, 0, 1}, axpy {1, 1, 0}, Adam {1, 3, 0}.
struct StreamPattern {
    int read = 0;     ///< arrays only read
    int updated = 0;  ///< arrays read and written in place (y += ...)
    int written = 0;  ///< arrays only written
    /// Same counts of read, updated and written arrays.
    bool operator==(const StreamPattern&) const = default;
    /// Array passes STREAM counts: each array once, an updated one twice (read, write).
    constexpr int counted() const { return read + 2 * updated + written; }
    /// Array passes memory really moves with ordinary stores: the counted ones plus one
    /// write-allocate read of each array that is only written.
    constexpr int moved() const { return counted() + written; }
};

/// "read r, update u, write w", leaving out the zero counts ("read 1, write 1").
std::string to_string(const StreamPattern& p);

/// The patterns StreamLoop has a loop for (those of the element-wise kernels).
std::vector<StreamPattern> stream_patterns();

/// A STREAM-style loop with traffic @p p over float arrays the caller owns, fused per
/// element as an element-wise kernel is (out = 1 + sum of the read arrays; each updated
/// array += 1e-3 x that), written with ordinary stores: the bandwidth a kernel of pattern
/// @p p should be compared with, since two kernels with the same pattern make the same
/// demands on memory. Passes are timed one at a time, beside a kernel that works on the
/// same arrays: on a virtual machine two loops with the same traffic over different arrays
/// differed by up to 11% (where the host placed their pages), and a busy host's bandwidth
/// drifts from one second to the next, so a kernel is compared fairly only with a loop over
/// its own memory, run just before it.
class StreamLoop {
public:
    /// @p arrays: the p.read arrays read, then the p.updated updated in place, then the
    /// p.written written, each of @p n floats. Throws for a pattern not in
    /// stream_patterns() or the wrong number of arrays.
    StreamLoop(const StreamPattern& p, std::vector<float*> arrays, std::int64_t n, int threads);
    /// Runs one pass and returns its GB/s, counted as STREAM counts them (each array read
    /// or written once). Overwrites the written arrays and updates the updated ones.
    double pass_gbs() const;
    /// Bytes one pass counts: p.counted() arrays of n floats (memory moves p.moved()).
    double counted_bytes() const;

private:
    StreamPattern pattern_;
    std::vector<float*> arrays_;
    std::int64_t n_;
    int threads_;
    void (*pass_)(float* const*, std::int64_t, std::int64_t);
};

/// STREAM copy (c[i] = a[i]) over arrays of @p array_bytes each: best of @p passes.
StreamResult stream_copy(std::int64_t array_bytes, int threads, int passes = 5);
/// The STREAM triad loop on one thread's share [@p lo, @p hi) of the arrays:
/// a[i] = b[i] + s * c[i]; nothing outside the range is touched.
void triad(double* a, const double* b, const double* c, double s, std::int64_t lo, std::int64_t hi);
/// STREAM triad (a[i] = b[i] + s * c[i]) over arrays of @p array_bytes each.
StreamResult stream_triad(std::int64_t array_bytes, int threads, int passes = 5);
/// The triad loop on [@p lo, @p hi) with a written by non-temporal (streaming) stores,
/// which skip the write-allocate read of a's lines.
void triad_nontemporal(double* a, const double* b, const double* c, double s, std::int64_t lo, std::int64_t hi);
/// STREAM triad with non-temporal stores ("triad-nt"): bytes counted as stream_triad
/// counts them, which here are also the bytes memory moves.
StreamResult stream_triad_nontemporal(std::int64_t array_bytes, int threads, int passes = 5);

/// Average latency of one dependent load, in nanoseconds, when chasing pointers through
/// a random cycle over @p working_set_bytes (one pointer per 64-byte cache line, so every
/// load touches a new line and the prefetchers cannot guess the next one).
double pointer_chase_ns(std::int64_t working_set_bytes, std::int64_t loads = 2'000'000);

/// One rung of the latency ladder.
struct LatencyPoint {
    std::int64_t bytes = 0;  ///< working set
    double ns = 0.0;         ///< latency per load
};

/// Latency over working sets from @p min_bytes to @p max_bytes, doubling.
std::vector<LatencyPoint> latency_ladder(std::int64_t min_bytes, std::int64_t max_bytes,
                                         std::int64_t loads_per_point = 2'000'000);

// ---- The roofline model ----

/// The arithmetic intensity (flops per byte moved) where the bandwidth roof meets the
/// compute roof: peak / bandwidth. Kernels below it are limited by memory.
double ridge_point(double peak_gflops, double bandwidth_gbs);
/// The GFLOP/s a kernel of @p intensity flops per byte can reach at most:
/// min(peak, bandwidth * intensity).
double roofline_gflops(double intensity, double peak_gflops, double bandwidth_gbs);
/// True when a kernel of @p intensity is limited by memory bandwidth, not by FMA peak.
bool memory_bound(double intensity, double peak_gflops, double bandwidth_gbs);

}  // namespace gl::hw
