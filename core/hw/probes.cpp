// Machine probes: the three numbers a roofline and a latency ladder are drawn from.
//
//   fma_peak        many independent FMA chains per thread: the compute ceiling
//   stream_*        STREAM copy and triad over arrays far larger than the caches: the
//                   memory ceiling
//   pointer_chase   one dependent load after another through a random cycle: latency
//
// Threads are the pinned workers of gl::parallel_run (a probe with two threads on a
// 2-core machine must have one thread per core, or it measures one core twice).
#include "hw/probes.hpp"

#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <numeric>
#include <vector>

#include "base/error.hpp"
#include "base/huge_pages.hpp"
#include "base/rng.hpp"
#include "parallel/thread_pool.hpp"
#include "sys/cpu_info.hpp"

// The STREAM loops are compiled three times (AVX-512, AVX2, baseline x86-64), as the
// element-wise kernels are, and the loader picks the best for this CPU: compiled for any
// x86-64 only (16-byte vectors), the triad measured 7.5-9% below the same traffic in wide
// vectors when memory gave two cores about 100 GB/s.
#if defined(__x86_64__) && !defined(__SANITIZE_ADDRESS__)
#define GL_STREAM_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define GL_STREAM_CLONES
#endif

namespace gl::hw {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
    return std::chrono::duration<double>(Clock::now() - start).count();
}

// ---- FMA peak -----------------------------------------------------------------------------
// An FMA has a latency of about 4 cycles and a CPU issues up to 2 per cycle, so at least
// 8 must be in flight: each loop keeps kChains independent accumulators, x = x * m + c,
// which converges (m < 1) and so never overflows or turns denormal.
constexpr int kChains = kFmaChains;

__attribute__((target("avx2,fma"))) double fma_128_f32(std::int64_t iters) {
    __m128 x[kChains];
    for (int i = 0; i < kChains; ++i) x[i] = _mm_set1_ps(static_cast<float>(i));
    const __m128 m = _mm_set1_ps(0.999f), c = _mm_set1_ps(0.001f);
    for (std::int64_t it = 0; it < iters; ++it)
        for (int i = 0; i < kChains; ++i) x[i] = _mm_fmadd_ps(x[i], m, c);
    float sum = 0.0f;
    for (auto& v : x) sum += _mm_cvtss_f32(v);
    return sum;
}

__attribute__((target("avx2,fma"))) double fma_128_f64(std::int64_t iters) {
    __m128d x[kChains];
    for (int i = 0; i < kChains; ++i) x[i] = _mm_set1_pd(i);
    const __m128d m = _mm_set1_pd(0.999), c = _mm_set1_pd(0.001);
    for (std::int64_t it = 0; it < iters; ++it)
        for (int i = 0; i < kChains; ++i) x[i] = _mm_fmadd_pd(x[i], m, c);
    double sum = 0.0;
    for (auto& v : x) sum += _mm_cvtsd_f64(v);
    return sum;
}

__attribute__((target("avx2,fma"))) double fma_256_f32(std::int64_t iters) {
    // LAB 04 BEGIN: the FMA peak loop (256-bit, float)
    // kChains independent accumulators x[i] = x[i] * m + c with _mm256_fmadd_ps, iters
    // times each; return something computed from all of them so none is optimized away.
    __m256 x[kChains];
    for (int i = 0; i < kChains; ++i) x[i] = _mm256_set1_ps(static_cast<float>(i));
    const __m256 m = _mm256_set1_ps(0.999f), c = _mm256_set1_ps(0.001f);
    for (std::int64_t it = 0; it < iters; ++it)
        for (int i = 0; i < kChains; ++i) x[i] = _mm256_fmadd_ps(x[i], m, c);
    float sum = 0.0f;
    for (auto& v : x) sum += _mm256_cvtss_f32(v);
    return sum;
    // LAB 04 END
}

__attribute__((target("avx2,fma"))) double fma_256_f64(std::int64_t iters) {
    __m256d x[kChains];
    for (int i = 0; i < kChains; ++i) x[i] = _mm256_set1_pd(i);
    const __m256d m = _mm256_set1_pd(0.999), c = _mm256_set1_pd(0.001);
    for (std::int64_t it = 0; it < iters; ++it)
        for (int i = 0; i < kChains; ++i) x[i] = _mm256_fmadd_pd(x[i], m, c);
    double sum = 0.0;
    for (auto& v : x) sum += _mm256_cvtsd_f64(v);
    return sum;
}

__attribute__((target("avx512f"))) double fma_512_f32(std::int64_t iters) {
    __m512 x[kChains];
    for (int i = 0; i < kChains; ++i) x[i] = _mm512_set1_ps(static_cast<float>(i));
    const __m512 m = _mm512_set1_ps(0.999f), c = _mm512_set1_ps(0.001f);
    for (std::int64_t it = 0; it < iters; ++it)
        for (int i = 0; i < kChains; ++i) x[i] = _mm512_fmadd_ps(x[i], m, c);
    alignas(64) float lanes[16];
    _mm512_store_ps(lanes, x[0]);  // one lane of each chain is enough to keep them all
    for (int i = 1; i < kChains; ++i) _mm512_store_ps(lanes, _mm512_add_ps(x[i], _mm512_load_ps(lanes)));
    return lanes[0];
}

__attribute__((target("avx512f"))) double fma_512_f64(std::int64_t iters) {
    __m512d x[kChains];
    for (int i = 0; i < kChains; ++i) x[i] = _mm512_set1_pd(i);
    const __m512d m = _mm512_set1_pd(0.999), c = _mm512_set1_pd(0.001);
    for (std::int64_t it = 0; it < iters; ++it)
        for (int i = 0; i < kChains; ++i) x[i] = _mm512_fmadd_pd(x[i], m, c);
    alignas(64) double lanes[8];
    _mm512_store_pd(lanes, x[0]);
    for (int i = 1; i < kChains; ++i) _mm512_store_pd(lanes, _mm512_add_pd(x[i], _mm512_load_pd(lanes)));
    return lanes[0];
}

using FmaLoop = double (*)(std::int64_t);

FmaLoop fma_loop(VectorWidth w, bool fp64) {
    switch (w) {
        case VectorWidth::Bits128: return fp64 ? fma_128_f64 : fma_128_f32;
        case VectorWidth::Bits256: return fp64 ? fma_256_f64 : fma_256_f32;
        case VectorWidth::Bits512: return fp64 ? fma_512_f64 : fma_512_f32;
    }
    return nullptr;
}

int lanes(VectorWidth w, bool fp64) {
    const int bits = w == VectorWidth::Bits128 ? 128 : w == VectorWidth::Bits256 ? 256 : 512;
    return bits / (fp64 ? 64 : 32);
}

// ---- STREAM -------------------------------------------------------------------------------

// Arrays of doubles for the STREAM kernels, 64-byte aligned.
struct Arrays {
    using Owned = std::unique_ptr<double, decltype(&std::free)>;
    std::vector<Owned> owned;
    std::int64_t n = 0;
    double* operator[](std::size_t k) const { return owned[k].get(); }
    std::vector<double*> pointers() const {
        std::vector<double*> p;
        for (const auto& o : owned) p.push_back(o.get());
        return p;
    }
};

double* aligned_doubles(std::int64_t n) {
    auto* p = static_cast<double*>(std::aligned_alloc(64, static_cast<std::size_t>((n * 8 + 63) / 64 * 64)));
    check(p != nullptr, "stream: out of memory");
    return p;
}

// One array per entry of @p values, each filled with its value. Each thread first
// touches the part of the arrays it will work on (on a NUMA machine the pages land near
// it), as STREAM does.
Arrays make_arrays(std::int64_t array_bytes, int threads, const std::vector<double>& values) {
    Arrays s;
    s.n = std::max<std::int64_t>(array_bytes / 8, 1);
    for (std::size_t k = 0; k < values.size(); ++k) s.owned.emplace_back(aligned_doubles(s.n), &std::free);
    parallel_run(threads, [&](int t) {
        const std::int64_t lo = s.n * t / threads, hi = s.n * (t + 1) / threads;
        for (std::size_t k = 0; k < values.size(); ++k) std::fill(s[k] + lo, s[k] + hi, values[k]);
    });
    return s;
}

// One pass of @p pass over n elements split among @p threads: GB/s for @p bytes.
template <class Pass>
double pass_gbs(std::int64_t n, int threads, double bytes, Pass pass) {
    const auto start = Clock::now();
    parallel_run(threads, [&](int t) { pass(n * t / threads, n * (t + 1) / threads); });
    return bytes / seconds_since(start) * 1e-9;
}

template <class Pass>
double best_gbs(const Arrays& s, int threads, int passes, double bytes, Pass pass) {
    double best = 0.0;
    for (int p = 0; p < passes; ++p) best = std::max(best, pass_gbs(s.n, threads, bytes, pass));
    return best;
}

// ---- pointer chasing ----------------------------------------------------------------------

struct alignas(64) Line {
    Line* next;
    char pad[64 - sizeof(Line*)];
};

}  // namespace

// Not contracted into a fused multiply-add in the wide clones: every clone, and the
// streaming-store triad below, rounds b + s c the same way (a product, then a sum).
GL_STREAM_CLONES __attribute__((optimize("fp-contract=off"))) void triad(double* a, const double* b, const double* c,
                                                                          double s, std::int64_t lo, std::int64_t hi) {
    // LAB 04 BEGIN: the STREAM triad loop
    // a[i] = b[i] + s * c[i] for i in [lo, hi): two arrays read, one written.
    for (std::int64_t i = lo; i < hi; ++i) a[i] = b[i] + s * c[i];
    // LAB 04 END
}

void triad_nontemporal(double* a, const double* b, const double* c, double s, std::int64_t lo, std::int64_t hi) {
    // The same triad, but a is written with non-temporal (streaming) stores: they go to a
    // write-combining buffer and on to memory as whole lines, without first reading the
    // line into the cache (no write-allocate). _mm_stream_pd needs a 16-byte address, so
    // an odd first element is written normally.
    std::int64_t i = lo;
    if (i < hi && reinterpret_cast<std::uintptr_t>(a + i) % 16 != 0) a[i] = b[i] + s * c[i], ++i;
    for (; i + 2 <= hi; i += 2)
        _mm_stream_pd(a + i, _mm_set_pd(b[i + 1] + s * c[i + 1], b[i] + s * c[i]));
    if (i < hi) a[i] = b[i] + s * c[i];
    _mm_sfence();  // streaming stores are weakly ordered: make them visible before we return
}

std::string to_string(VectorWidth w) {
    switch (w) {
        case VectorWidth::Bits128: return "128-bit";
        case VectorWidth::Bits256: return "256-bit";
        case VectorWidth::Bits512: return "512-bit";
    }
    return "?";
}

std::vector<VectorWidth> fma_widths() {
    const auto& f = sys::cpu_info().features;
    std::vector<VectorWidth> w;
    if (f.fma && f.avx2) w = {VectorWidth::Bits128, VectorWidth::Bits256};
    if (f.fma && f.avx512f) w.push_back(VectorWidth::Bits512);
    return w;
}

PeakResult fma_peak(VectorWidth width, bool fp64, int threads, double seconds) {
    const auto widths = fma_widths();
    check(std::find(widths.begin(), widths.end(), width) != widths.end(),
          "fma_peak: this CPU has no " + to_string(width) + " FMA");
    check(threads >= 1, "fma_peak: threads must be >= 1");
    const FmaLoop loop = fma_loop(width, fp64);
    // Many short runs, keeping the best: on a shared machine any run may lose its core
    // for a while, and the peak is what the hardware can do, not what it did while
    // interrupted. Calibrate one run to about 1/30 of the time on one thread first (this
    // also warms the core's clock up).
    constexpr int kRuns = 30;
    std::int64_t iters = 1 << 12;
    for (;;) {
        const auto start = Clock::now();
        volatile double sink = loop(iters);
        (void)sink;
        if (seconds_since(start) > seconds / kRuns || iters > (std::int64_t{1} << 40)) break;
        iters *= 2;
    }
    PeakResult r;
    r.width = width;
    r.fp64 = fp64;
    std::vector<double> sinks(static_cast<std::size_t>(threads));
    r.seconds = 1e30;
    for (int run = 0; run < kRuns; ++run) {
        const auto start = Clock::now();
        parallel_run(threads, [&](int t) { sinks[static_cast<std::size_t>(t)] = loop(iters); });
        r.seconds = std::min(r.seconds, seconds_since(start));
    }
    r.threads = std::min(threads, get_num_threads());
    r.iterations = iters;
    // LAB 04 BEGIN: count the flops of the FMA probe
    // Each thread ran iters x kChains FMAs on lanes(width, fp64) lanes each, and an FMA
    // is 2 floating-point operations (a multiply and an add).
    const double flops = 2.0 * static_cast<double>(iters) * kChains * lanes(width, fp64) * r.threads;
    r.gflops = flops / r.seconds * 1e-9;
    // LAB 04 END
    return r;
}

double best_fp32_peak_gflops(int threads, double seconds) {
    double best = 0.0;
    for (const auto w : fma_widths()) best = std::max(best, fma_peak(w, false, threads, seconds).gflops);
    check(best > 0.0, "best_fp32_peak_gflops: this CPU has no FMA3");
    return best;
}

StreamResult stream_copy(std::int64_t array_bytes, int threads, int passes) {
    threads = std::min(threads, get_num_threads());
    const Arrays s = make_arrays(array_bytes, threads, {1.0, 0.0});
    double *a = s[0], *c = s[1];
    StreamResult r{"copy", 2 * s.n * 8, threads, 0.0};
    r.gbs = best_gbs(s, threads, passes, static_cast<double>(r.bytes), [&](std::int64_t lo, std::int64_t hi) {
        std::copy(a + lo, a + hi, c + lo);
    });
    return r;
}

namespace {

// The triad over fresh arrays, written by @p loop (ordinary or streaming stores); the
// bytes are counted as STREAM counts them either way.
template <class Loop>
StreamResult run_triad(const char* name, std::int64_t array_bytes, int threads, int passes, Loop loop) {
    threads = std::min(threads, get_num_threads());
    const Arrays s = make_arrays(array_bytes, threads, {1.0, 2.0, 0.0});
    double *a = s[0], *b = s[1], *c = s[2];
    StreamResult r{name, 3 * s.n * 8, threads, 0.0};
    r.gbs = best_gbs(s, threads, passes, static_cast<double>(r.bytes),
                     [&](std::int64_t lo, std::int64_t hi) { loop(a, b, c, 3.0, lo, hi); });
    check(a[0] == 2.0 + 3.0 * 0.0 && a[s.n - 1] == 2.0, std::string(name) + ": the triad computed a wrong result");
    return r;
}

}  // namespace

StreamResult stream_triad(std::int64_t array_bytes, int threads, int passes) {
    return run_triad("triad", array_bytes, threads, passes, triad);
}

StreamResult stream_triad_nontemporal(std::int64_t array_bytes, int threads, int passes) {
    return run_triad("triad-nt", array_bytes, threads, passes, triad_nontemporal);
}

namespace {

// One thread's share [lo, hi) of a pattern kernel: arrays [0, R) are read, [R, R + U)
// updated in place, [R + U, R + U + W) written. Every array is touched once per element in
// one loop, so memory sees R + U + W concurrent streams, as it does under a fused
// element-wise kernel. (A first version walked the arrays in turn, 512 elements of each at
// a time, so memory served one stream at a time: it measured 40% slower here.)
template <int R, int U, int W>
GL_STREAM_CLONES void pattern_pass(float* const* arrays, std::int64_t lo, std::int64_t hi) {
    for (std::int64_t i = lo; i < hi; ++i) {
        float sum = 1.0f;
        for (int k = 0; k < R; ++k) sum += arrays[k][i];
        for (int k = 0; k < U; ++k) arrays[R + k][i] += 1e-3f * sum;
        for (int k = 0; k < W; ++k) arrays[R + U + k][i] = sum;
    }
}

using PatternPass = void (*)(float* const*, std::int64_t, std::int64_t);

struct PatternLoop {
    StreamPattern pattern;
    PatternPass pass;
};

// The loops, one instantiation per pattern: with the counts known at compile time the
// compiler unrolls the array loops and vectorizes over i.
const std::vector<PatternLoop>& pattern_loops() {
    static const std::vector<PatternLoop> loops = {
        {{1, 0, 1}, pattern_pass<1, 0, 1>},  // copy, relu, log-softmax rows
        {{2, 0, 1}, pattern_pass<2, 0, 1>},  // add (the triad's traffic)
        {{1, 1, 0}, pattern_pass<1, 1, 0>},  // axpy
        {{1, 3, 0}, pattern_pass<1, 3, 0>},  // Adam
    };
    return loops;
}

const PatternLoop& pattern_loop(const StreamPattern& p) {
    const auto& loops = pattern_loops();
    const auto it = std::find_if(loops.begin(), loops.end(), [&](const PatternLoop& l) { return l.pattern == p; });
    check(it != loops.end(), "StreamLoop: no loop for the pattern (" + to_string(p) +
                                 "); add its instantiation to pattern_loops() in core/hw/probes.cpp");
    return *it;
}

}  // namespace

std::string to_string(const StreamPattern& p) {
    std::string out;
    auto add = [&](const char* verb, int count) {
        if (count > 0) out += (out.empty() ? "" : ", ") + std::string(verb) + " " + std::to_string(count);
    };
    add("read", p.read);
    add("update", p.updated);
    add("write", p.written);
    return out.empty() ? "nothing" : out;
}

std::vector<StreamPattern> stream_patterns() {
    std::vector<StreamPattern> out;
    for (const auto& l : pattern_loops()) out.push_back(l.pattern);
    return out;
}

StreamLoop::StreamLoop(const StreamPattern& p, std::vector<float*> arrays, std::int64_t n, int threads)
    : pattern_(p), arrays_(std::move(arrays)), n_(n), threads_(std::min(threads, get_num_threads())),
      pass_(pattern_loop(p).pass) {
    check(static_cast<int>(arrays_.size()) == p.read + p.updated + p.written,
          "StreamLoop: the pattern (" + to_string(p) + ") needs " + std::to_string(p.read + p.updated + p.written) +
              " arrays, not " + std::to_string(arrays_.size()));
    check(n_ >= 1 && threads_ >= 1, "StreamLoop: needs at least one element and one thread");
}

double StreamLoop::counted_bytes() const {
    return static_cast<double>(pattern_.counted()) * static_cast<double>(n_) * sizeof(float);
}

double StreamLoop::pass_gbs() const {
    return hw::pass_gbs(n_, threads_, counted_bytes(),
                        [&](std::int64_t lo, std::int64_t hi) { pass_(arrays_.data(), lo, hi); });
}

double pointer_chase_ns(std::int64_t working_set_bytes, std::int64_t loads) {
    const std::int64_t n = std::max<std::int64_t>(working_set_bytes / 64, 2);
    const std::size_t bytes = static_cast<std::size_t>(n) * sizeof(Line);
    // Huge pages where the OS allows them, so large working sets measure the caches and
    // DRAM rather than page-table walks.
    std::unique_ptr<Line, decltype(&std::free)> lines(static_cast<Line*>(allocate_on_huge_pages(bytes)), &std::free);
    check(lines != nullptr, "pointer_chase: out of memory for " + std::to_string(working_set_bytes) + " bytes");
    // A random cyclic order of the lines (Sattolo's shuffle gives one cycle through all).
    std::vector<std::int64_t> order(static_cast<std::size_t>(n));
    std::iota(order.begin(), order.end(), 0);
    Rng rng(42);
    for (std::int64_t i = n - 1; i > 0; --i)
        std::swap(order[static_cast<std::size_t>(i)],
                  order[static_cast<std::size_t>(rng.next_u64() % static_cast<std::uint64_t>(i))]);
    Line* base = lines.get();
    for (std::int64_t i = 0; i < n; ++i)
        base[order[static_cast<std::size_t>(i)]].next = &base[order[static_cast<std::size_t>((i + 1) % n)]];
    // LAB 04 BEGIN: chase the pointers
    // Walk p = p->next from base[0]; every load depends on the previous one, so the time
    // per load is the latency. Walk the cycle once untimed first (to warm the caches and
    // the TLB), then time `loads` steps (best of a few runs), and use the final pointer
    // so the compiler keeps the loop.
    // Take the best of 3 timed walks (a walk interrupted by another process is slower).
    const Line* p = base;
    for (std::int64_t i = 0; i < n; ++i) p = p->next;
    double best = 1e30;
    for (int run = 0; run < 3; ++run) {
        const auto start = Clock::now();
        for (std::int64_t i = 0; i < loads / 3; ++i) p = p->next;
        best = std::min(best, seconds_since(start) * 1e9 / static_cast<double>(loads / 3));
    }
    check(p != nullptr, "pointer_chase: broken cycle");
    return best;
    // LAB 04 END
}

std::vector<LatencyPoint> latency_ladder(std::int64_t min_bytes, std::int64_t max_bytes,
                                         std::int64_t loads_per_point) {
    std::vector<LatencyPoint> ladder;
    for (std::int64_t b = min_bytes; b <= max_bytes; b *= 2) ladder.push_back({b, pointer_chase_ns(b, loads_per_point)});
    return ladder;
}

double ridge_point(double peak_gflops, double bandwidth_gbs) {
    check(peak_gflops > 0 && bandwidth_gbs > 0, "ridge_point: peak and bandwidth must be positive");
    // LAB 04 BEGIN: the ridge point of the roofline
    // The ridge is the intensity where bandwidth x intensity reaches the peak.
    return peak_gflops / bandwidth_gbs;
    // LAB 04 END
}

double roofline_gflops(double intensity, double peak_gflops, double bandwidth_gbs) {
    // LAB 04 BEGIN: the attainable GFLOP/s under the roofline
    // Whichever roof is lower at this intensity: the compute roof or the bandwidth roof.
    return std::min(peak_gflops, bandwidth_gbs * intensity);
    // LAB 04 END
}

bool memory_bound(double intensity, double peak_gflops, double bandwidth_gbs) {
    // LAB 04 BEGIN: memory-bound or compute-bound
    // Left of the ridge point the bandwidth roof is the lower one.
    return intensity < ridge_point(peak_gflops, bandwidth_gbs);
    // LAB 04 END
}

}  // namespace gl::hw
