// gemm_ceiling: where a packed GEMM's time goes, from the FMA peak down to the whole call.
//
//   build/bench/gemm_ceiling --n 2048 --threads 2 --rounds 8
//   build/bench/gemm_ceiling --n 2048 --kernels balanced onednn openblas --json ceiling.json
//
// Five measurements of GFLOP/s on the same threads, each round measuring the peak first and
// the others in an order rotated from round to round:
//
//   1. the FMA peak at the micro-kernel's vector width (hw::fma_peak, registers only);
//   2. the micro-kernel on a hot block: each thread multiplies one packed MC x KC block of A
//      by a packed panel of B small enough to stay in L2, into a C block that stays in L1/L2;
//   3. Goto's loops without the packing: each thread walks its column stripe of C exactly
//      as version 5 does (every row block, every K block, every full micro-tile), but
//      multiplies one block of A and one panel of B packed once before the timing;
//   4. the same loops with the packing put back (each panel of B packed before its K block,
//      each block of A before its row block, as version 5 does), with the time spent
//      packing A and packing B clocked apart;
//   5. the GEMM kernels themselves (bench_gemm's names).
//
// 1 -> 2 is what the micro-kernel loses to its own instructions; 2 -> 3 what it loses to
// the caches when C and the panels are the full problem's, and to threads that finish
// apart; 3 -> 4 what packing costs; 4 -> 5 the ragged edges and what a kernel does
// differently from version 5 (version 8 shares the end of each stripe). A GEMM at stage 3
// could only get faster with a better micro-kernel or blocking. Stages 2 and 3 leave C
// holding no useful result; one run of stage 4 is checked against version 5 before the
// timing starts.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "base/aligned_vector.hpp"
#include "base/error.hpp"
#include "hw/probes.hpp"
#include "kernels/cpu/sgemm/packed.hpp"
#include "kernels/gemm.hpp"
#include "parallel/thread_pool.hpp"
#include "testkit/aligned.hpp"
#include "testkit/random.hpp"
#include "testkit/timing.hpp"
#include "cpu_gemm_kernels.hpp"
#include "warm_up.hpp"

namespace {

namespace packed = gl::kernels::packed;
using gl::testkit::Clock;
using gl::testkit::median;
using gl::testkit::seconds_since;

struct Options {
    std::int64_t n = 2048;
    std::vector<std::string> kernels{"balanced", "onednn"};
    int threads = 2, rounds = 8;
    double min_seconds = 0.05;  // each timed measurement runs at least this long
    std::string isa;            // the packed kernels' instruction set; empty: the fastest here
    std::string json_path;
};

// One stage: a name, how to run it once, and the floating-point operations one run does.
struct Stage {
    std::string name;
    std::function<void()> run;
    double flops = 0.0;
    std::vector<double> gflops;    // one per round
    std::vector<double> of_peak;   // gflops / the same round's FMA peak
};

// GFLOP/s of @p s: whole runs repeated for at least min_seconds, after 30 ms untimed.
double measure(const Stage& s, double min_seconds) {
    gl::bench::warm_up(s.run);
    const auto start = Clock::now();
    std::int64_t runs = 0;
    double seconds = 0.0;
    do {
        s.run();
        ++runs;
        seconds = seconds_since(start);
    } while (seconds < min_seconds);
    return s.flops * static_cast<double>(runs) / seconds * 1e-9;
}

// Columns [j0, j1) of C: thread t's stripe of an n-column C, on micro-tile boundaries, as
// version 5 splits a square C.
std::pair<std::int64_t, std::int64_t> stripe(std::int64_t n, int t, int threads, std::int64_t nr) {
    const std::int64_t units = (n + nr - 1) / nr;
    return {std::min(n, units * t / threads * nr), std::min(n, units * (t + 1) / threads * nr)};
}

// One thread's packing buffers. Stages 2 and 3 multiply a block of A and a panel of B
// packed once, from the problem's own operands: the top MC x KC block of A, and the first
// KC rows of the first NC columns of the thread's stripe of B. Stage 4 packs into the
// others, as version 5 does.
struct Packed {
    gl::AlignedVector<float> a, b;            // packed once (stages 2 and 3)
    gl::AlignedVector<float> work_a, work_b;  // packed in every run (stage 4)
};

// Stage 2's panel of B, in floats (256 KiB), and the multiply-adds thread 0 does in one run
// at least (walking its block several times), so that handing the run to the threads costs
// little beside it.
constexpr std::int64_t kHotPanelFloats = 64 * 1024;
constexpr double kHotMultiplyAdds = 1 << 27;

// Stage 2 for one thread: the micro-kernel over rows x KC of the packed block of A and a
// KC x columns panel of B, into the top rows of the thread's stripe of C, @p repeats times
// (rows and columns are whole micro-tiles).
void hot_block(const packed::MicroKernel& mk, const Packed& p, std::int64_t kc, std::int64_t rows,
               std::int64_t columns, int repeats, float* c, std::int64_t ldc) {
    for (int repeat = 0; repeat < repeats; ++repeat)
        for (std::int64_t jr = 0; jr < columns; jr += mk.nr)
            for (std::int64_t ir = 0; ir < rows; ir += mk.mr)
                mk.run(kc, p.a.data() + ir * kc, p.b.data() + jr * kc, c + ir * ldc + jr, ldc, true);
}

// Seconds one thread spent in stage 4, summed over every run: packing A, packing B, in all.
// One cache line each, as the threads write them.
struct alignas(64) PackingTime {
    double a = 0.0, b = 0.0, total = 0.0;
};

// Version 5's loops (packed::gemm_packed_block) over one thread's stripe, columns [j0, j1)
// of C: panels of NC columns, K blocks of depth kc, row blocks of MC, then every full
// micro-tile (the ragged edges are left out). Without @p time (stage 3) the block of A and
// the panel of B packed once stand in for all of them. With it (stage 4) each panel of B
// is packed before its K block and each block of A before its row block, and the time
// spent packing is added to @p time.
void version5_loops(const gl::kernels::GemmArgs<float>& g, const packed::MicroKernel& mk, const packed::Blocking& bl,
                    std::int64_t kc, std::int64_t j0, std::int64_t j1, Packed& p, PackingTime* time) {
    const auto start = Clock::now();
    for (std::int64_t jc = j0; jc < j1; jc += bl.nc) {
        const std::int64_t nc = std::min(bl.nc, j1 - jc);
        for (std::int64_t pc = 0; pc < g.K; pc += kc) {
            const std::int64_t depth = std::min(kc, g.K - pc);
            const float* b = p.b.data();
            std::int64_t b_stride = kc;  // floats from one sliver of B to the next
            if (time) {
                const auto clock = Clock::now();
                packed::pack_b(g, pc, depth, jc, nc, mk.nr, p.work_b.data());
                time->b += seconds_since(clock);
                b = p.work_b.data();
                b_stride = depth;
            }
            for (std::int64_t ic = 0; ic + mk.mr <= g.M; ic += bl.mc) {
                const float* a = p.a.data();
                std::int64_t a_stride = kc;  // floats from one sliver of A to the next
                if (time) {
                    const auto clock = Clock::now();
                    packed::pack_a(g, ic, std::min(bl.mc, g.M - ic), pc, depth, mk.mr, p.work_a.data());
                    time->a += seconds_since(clock);
                    a = p.work_a.data();
                    a_stride = depth;
                }
                for (std::int64_t jr = 0; jr + mk.nr <= nc; jr += mk.nr)
                    for (std::int64_t ir = 0; ir < bl.mc && ic + ir + mk.mr <= g.M; ir += mk.mr)
                        mk.run(depth, a + ir * a_stride, b + jr * b_stride, g.C + (ic + ir) * g.ldc + jc + jr, g.ldc,
                               pc > 0);
            }
        }
    }
    if (time) time->total += seconds_since(start);
}

// Full micro-tiles in an extent: what stages 2-4 compute (they leave out the ragged edges).
std::int64_t full(std::int64_t extent, std::int64_t tile) { return extent / tile * tile; }

std::vector<Stage> make_stages(const Options& o, const gl::kernels::GemmArgs<float>& g, std::vector<Packed>& packs,
                               std::vector<PackingTime>& packing) {
    const packed::MicroKernel& mk = packed::micro_kernel(packed::active_isa());
    const packed::Blocking bl = packed::blocking_for(packed::active_isa());
    // Version 5's depth: K cut into as few blocks of at most KC as it takes, of equal depth.
    const std::int64_t n = o.n, k_blocks = (n + bl.kc - 1) / bl.kc, kc = (n + k_blocks - 1) / k_blocks;
    // A panel of B of at most 256 KiB, small enough to share L2 with the block of A.
    const std::int64_t hot_columns = std::max<std::int64_t>(mk.nr, kHotPanelFloats / kc / mk.nr * mk.nr);
    const int threads = o.threads;
    // Each thread's columns of the hot panel, and how many walks over it make one run.
    const std::int64_t hot_rows = full(std::min(bl.mc, n), mk.mr);
    const auto hot_columns_of = [=](int t) {
        const auto [j0, j1] = stripe(n, t, threads, mk.nr);
        return full(std::min(hot_columns, j1 - j0), mk.nr);
    };
    const double hot_walk = static_cast<double>(hot_rows * hot_columns_of(0) * kc);
    const int hot_repeats = hot_walk > 0 ? static_cast<int>(std::ceil(kHotMultiplyAdds / hot_walk)) : 0;
    packs.resize(static_cast<std::size_t>(threads));
    packing.assign(static_cast<std::size_t>(threads), {});
    double loop_flops = 0.0, hot_flops = 0.0;
    for (int t = 0; t < threads; ++t) {
        const auto [j0, j1] = stripe(n, t, threads, mk.nr);
        if (hot_rows == 0 || hot_columns_of(t) == 0)
            throw gl::Error("gemm_ceiling: N = " + std::to_string(n) + " gives thread " + std::to_string(t) +
                            " no whole " + std::to_string(mk.mr) + " x " + std::to_string(mk.nr) +
                            " micro-tile; use a larger --n or fewer --threads");
        Packed& p = packs[static_cast<std::size_t>(t)];
        const std::int64_t panel_columns = std::min(bl.nc, j1 - j0);
        const auto a_floats = static_cast<std::size_t>((bl.mc + mk.mr) * kc);
        const auto b_floats = static_cast<std::size_t>((panel_columns + mk.nr) * kc);
        p.a.resize(a_floats);
        p.b.resize(b_floats);
        p.work_a.resize(a_floats);
        p.work_b.resize(b_floats);
        packed::pack_a(g, 0, std::min(bl.mc, n), 0, kc, mk.mr, p.a.data());
        packed::pack_b(g, 0, kc, j0, panel_columns, mk.nr, p.b.data());
        // Every full tile of the stripe, as version5_loops walks it (NC is a whole number of
        // NR), over the whole depth.
        std::int64_t rows = 0;
        for (std::int64_t ic = 0; ic + mk.mr <= n; ic += bl.mc) rows += full(std::min(bl.mc, n - ic), mk.mr);
        loop_flops += 2.0 * static_cast<double>(rows * full(j1 - j0, mk.nr) * n);
        hot_flops += 2.0 * hot_repeats * static_cast<double>(hot_rows * hot_columns_of(t) * kc);
    }
    std::vector<Stage> stages;
    stages.push_back({"FMA peak", nullptr, 0.0, {}, {}});  // measured by hw::fma_peak
    stages.push_back({"micro-kernel, hot block",
                      [=, &packs, &g] {
                          gl::parallel_run(threads, [&](int t) {
                              const std::int64_t j0 = stripe(n, t, threads, mk.nr).first;
                              hot_block(mk, packs[static_cast<std::size_t>(t)], kc, hot_rows, hot_columns_of(t), hot_repeats,
                                        g.C + j0, g.ldc);
                          });
                      },
                      hot_flops, {}, {}});
    stages.push_back({"loops, no packing",
                      [=, &packs, &g] {
                          gl::parallel_run(threads, [&](int t) {
                              const auto [j0, j1] = stripe(n, t, threads, mk.nr);
                              version5_loops(g, mk, bl, kc, j0, j1, packs[static_cast<std::size_t>(t)], nullptr);
                          });
                      },
                      loop_flops, {}, {}});
    stages.push_back({"loops, packing as v5",
                      [=, &packs, &packing, &g] {
                          gl::parallel_run(threads, [&](int t) {
                              const auto [j0, j1] = stripe(n, t, threads, mk.nr);
                              const auto i = static_cast<std::size_t>(t);
                              version5_loops(g, mk, bl, kc, j0, j1, packs[i], &packing[i]);
                          });
                      },
                      loop_flops, {}, {}});
    for (const auto& name : o.kernels) {
        const auto& kernel = gl::kernels::find_gemm(name);
        stages.push_back({"gemm " + name, [&kernel, &g] { kernel.sgemm(g); }, 2.0 * static_cast<double>(n * n * n),
                          {}, {}});
    }
    return stages;
}

// Stage 4 computes the product on every full micro-tile: one run of it must agree there
// with version 5 itself, or it is not walking version 5's loops.
void check_against_version5(const Stage& stage4, const gl::kernels::GemmArgs<float>& g, int threads) {
    const packed::MicroKernel& mk = packed::micro_kernel(packed::active_isa());
    std::vector<float> expected(static_cast<std::size_t>(g.M * g.ldc));
    gl::kernels::GemmArgs<float> reference = g;
    reference.C = expected.data();
    gl::kernels::find_gemm("threaded").sgemm(reference);
    stage4.run();
    for (int t = 0; t < threads; ++t) {
        const auto [j0, j1] = stripe(g.N, t, threads, mk.nr);
        for (std::int64_t i = 0; i < full(g.M, mk.mr); ++i)
            for (std::int64_t j = j0; j < j0 + full(j1 - j0, mk.nr); ++j) {
                const float want = expected[static_cast<std::size_t>(i * g.ldc + j)], got = g.C[i * g.ldc + j];
                if (std::abs(got - want) > 1e-5f * (1.0f + std::abs(want)))
                    throw gl::Error("gemm_ceiling: stage 4 computed C(" + std::to_string(i) + ", " + std::to_string(j) +
                                    ") = " + std::to_string(got) + ", version 5 " + std::to_string(want) +
                                    ": its loops no longer match version 5's");
            }
    }
}

// The FMA peak at the active micro-kernel's vector width (the widest for the portable one,
// which the compiler vectorizes as it can).
double peak_gflops(int threads, double seconds) {
    switch (packed::active_isa()) {
        case packed::Isa::Avx512: return gl::hw::fma_peak(gl::hw::VectorWidth::Bits512, false, threads, seconds).gflops;
        case packed::Isa::Avx2: return gl::hw::fma_peak(gl::hw::VectorWidth::Bits256, false, threads, seconds).gflops;
        case packed::Isa::Portable: break;
    }
    return gl::hw::best_fp32_peak_gflops(threads, seconds);
}

packed::Isa isa_named(const std::string& name) {
    for (const packed::Isa isa : {packed::Isa::Portable, packed::Isa::Avx2, packed::Isa::Avx512})
        if (packed::to_string(isa) == name) return isa;
    throw gl::Error("gemm_ceiling: unknown instruction set '" + name + "'");
}

// Stage 4's packing as shares of its threads' time, all threads and runs together.
struct PackingShare {
    double a = 0.0, b = 0.0;
};
PackingShare share_of(const std::vector<PackingTime>& packing) {
    PackingTime sum;
    for (const PackingTime& t : packing) {
        sum.a += t.a;
        sum.b += t.b;
        sum.total += t.total;
    }
    return {sum.a / sum.total, sum.b / sum.total};
}

void print(const Options& o, const std::vector<Stage>& stages, const PackingShare& packing) {
    const packed::MicroKernel& mk = packed::micro_kernel(packed::active_isa());
    const packed::Blocking bl = packed::blocking_for(packed::active_isa());
    std::printf("N = %lld, %d threads, %d rounds; %s micro-kernel %d x %d, MC x KC x NC = %lld x %lld x %lld\n",
                static_cast<long long>(o.n), o.threads, o.rounds, packed::to_string(mk.isa).c_str(), mk.mr, mk.nr,
                static_cast<long long>(bl.mc), static_cast<long long>(bl.kc), static_cast<long long>(bl.nc));
    std::printf("%-26s %12s %12s %14s\n", "stage", "GFLOP/s", "% of peak", "(lowest-highest)");
    for (const Stage& s : stages) {
        const auto [lo, hi] = std::minmax_element(s.of_peak.begin(), s.of_peak.end());
        std::printf("%-26s %12.1f %11.1f%% %6.1f-%.1f%%\n", s.name.c_str(), median(s.gflops), 100.0 * median(s.of_peak),
                    100.0 * *lo, 100.0 * *hi);
    }
    const packed::Isa fastest = packed::supported_isas().back();
    if (packed::active_isa() == packed::Isa::Avx2 && fastest != packed::Isa::Avx2)
        std::printf("The peak is at the avx2 micro-kernel's 256-bit width; kernels that ignore --isa (the peer "
                    "libraries) may use wider vectors and pass 100%%.\n");
    if (packed::active_isa() == packed::Isa::Portable)
        std::printf("The peak is at the widest vectors this CPU has; the portable micro-kernel uses what the compiler "
                    "makes of plain C++.\n");
    std::printf("In 'loops, packing as v5' the threads spent %.1f%% of their time packing A and %.1f%% packing B.\n",
                100.0 * packing.a, 100.0 * packing.b);
}

nlohmann::json to_json(const Options& o, const std::vector<Stage>& stages, const PackingShare& packing) {
    nlohmann::json j = {{"n", o.n},
                        {"threads", o.threads},
                        {"rounds", o.rounds},
                        {"isa", packed::to_string(packed::active_isa())},
                        {"packing_a_share", packing.a},
                        {"packing_b_share", packing.b},
                        {"stages", nlohmann::json::array()}};
    for (const Stage& s : stages)
        j["stages"].push_back({{"stage", s.name},
                               {"gflops", s.gflops},
                               {"of_peak", s.of_peak},
                               {"median_gflops", median(s.gflops)},
                               {"median_of_peak", median(s.of_peak)}});
    return j;
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"gemm_ceiling: a packed GEMM against its FMA peak, its micro-kernel, and its loops without and with packing"};
    Options o;
    app.add_option("--n", o.n, "matrix size N (N x N x N)")->check(CLI::Range(16, 8192));
    app.add_option("--kernels", o.kernels, "GEMM kernels to time beside the stages (bench_gemm's names)");
    app.add_option("--threads", o.threads, "threads")->check(CLI::Range(1, 256));
    app.add_option("--rounds", o.rounds, "rounds (each measures every stage once, in a rotated order)")
        ->check(CLI::Range(1, 10000));
    app.add_option("--min-seconds", o.min_seconds, "shortest timed run of a stage")->check(CLI::Range(0.0, 60.0));
    app.add_option("--isa", o.isa, "micro-kernel for stages 2-4 and our GEMM kernels (default: the fastest here)")
        ->check(CLI::IsMember({"portable", "avx2", "avx512"}));
    app.add_option("--json", o.json_path, "also write every round's numbers to this JSON file");
    CLI11_PARSE(app, argc, argv);
    try {
        gl::bench::check_cpu_gemm_kernels("gemm_ceiling", o.kernels);
        if (!o.isa.empty()) packed::force_isa(isa_named(o.isa));  // throws if this CPU cannot run it
        gl::set_num_threads(o.threads);
        o.threads = gl::get_num_threads();  // the pool may cap it
        const auto count = static_cast<std::size_t>(o.n * o.n);
        const auto A = gl::testkit::aligned(gl::testkit::random_floats(count, 1));
        const auto B = gl::testkit::aligned(gl::testkit::random_floats(count, 2));
        gl::testkit::AlignedVector<float> C(count);
        const auto g = gl::kernels::dense_gemm_args(false, false, o.n, o.n, o.n, A.data(), B.data(), C.data());
        std::vector<Packed> packs;
        std::vector<PackingTime> packing;
        std::vector<Stage> stages = make_stages(o, g, packs, packing);
        check_against_version5(stages[3], g, o.threads);
        packing.assign(packing.size(), {});  // the check's run is not timed
        const std::size_t k = stages.size();
        for (int round = 0; round < o.rounds; ++round) {
            // The peak first in every round, so each stage's share compares with the same
            // round's peak; the other stages in an order rotated from round to round.
            const double peak = peak_gflops(o.threads, o.min_seconds);
            stages[0].gflops.push_back(peak);
            stages[0].of_peak.push_back(1.0);
            for (std::size_t step = 0; step + 1 < k; ++step) {
                Stage& s = stages[1 + (step + static_cast<std::size_t>(round)) % (k - 1)];
                const double gflops = measure(s, o.min_seconds);
                s.gflops.push_back(gflops);
                s.of_peak.push_back(gflops / peak);
            }
        }
        print(o, stages, share_of(packing));
        if (!o.json_path.empty()) {
            std::ofstream f(o.json_path);
            if (!(f << to_json(o, stages, share_of(packing)).dump(1) << '\n')) throw gl::Error("gemm_ceiling: cannot write " + o.json_path);
        }
    } catch (const std::exception& e) {
        std::fprintf(stderr, "%s\n", e.what());
        return 1;
    }
    return 0;
}
