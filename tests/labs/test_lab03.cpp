// Lab 03 graded tests: the coalesced, the shared-memory tiled and (extra points) the
// register-blocked CUDA SGEMM kernels, run on the CPU runtime, so no GPU is needed.
// Points per test are in labs/03-cuda-gemm/rubric.json.
//
// Correctness: each kernel against a double-precision triple loop, on shapes that are not
// multiples of the tiles, under three thread schedules (in order, reverse, seeded random):
// a missing __syncthreads often survives one order, not all three.
// Performance, by a deterministic proxy: the runtime counts the memory traffic of a run
// (32-byte sectors of global memory, shared-memory wavefronts), and the counts are compared
// with those of the reference kernel in the same run. The reference kernels are generated
// from core/kernels/cuda/ at build time (tests/meson.build), so they are the core's even
// when the student's handout files replace the core ones.
//
// The student's kernels are called only inside graded::student (graded.hpp): the grader
// records their results and counts in a sandbox and checks them in this program built
// from the reference. The counts are what the CPU runtime counted inside the student's
// process: the checker compares them with the reference kernel's, it cannot recount them.
//
// Lab03Grader.*: not graded. They prove that the correctness check fails the reference
// tiled kernel with either of its two __syncthreads removed, and reports a kernel whose
// barrier one thread skips (a deadlock) instead of hanging.
#include <gtest/gtest.h>

#include <cmath>
#include <exception>
#include <functional>
#include <map>
#include <sstream>
#include <tuple>
#include <string>
#include <vector>

#include "../cuda_cpu/device_vector.hpp"
#include "../cuda_cpu/sgemm_oracle.hpp"
#include "../cuda_cpu/training_step.hpp"
#include "cuda_cpu/cpu_runtime.hpp"
#include "cuda_cpu/cuda_compat.hpp"
#include "cuda_cpu/memory_counters.hpp"
#include "kernels/cuda/sgemm.hpp"
#include "kernels/gemm.hpp"
#include "lab03_divergent_barrier_sgemm_3.cuh"
#include "lab03_no_load_barrier_sgemm_3.cuh"
#include "lab03_no_reuse_barrier_sgemm_3.cuh"
#include "lab03_reference_sgemm.cuh"
#include "graded.hpp"

namespace {

using gl::cuda::cpu::MemoryCounters;
using gl::cuda::cpu::Order;
using gl::cuda::cpu::Schedule;
using gl::test::DeviceVector;
using gl::test::GemmShape;

constexpr int kCoalesced = 2, kTiled = 3, kRegisterBlocked = 5;  // version numbers (sgemm.cuh)

/// Runs a SGEMM kernel: C = A * B, row-major, on the CPU runtime.
using Sgemm = std::function<void(int M, int N, int K, const float* A, const float* B, float* C)>;

/// The student's version @p version (the handout's kernel in student mode), its result
/// recorded (and in the checker replayed) through graded::student.
Sgemm yours(int version) {
    return [version](int M, int N, int K, const float* A, const float* B, float* C) {
        const std::size_t size = std::size_t(M) * std::size_t(N);
        const auto out = gl::graded::student<std::vector<float>>("version " + std::to_string(version), [&] {
            std::vector<float> c(C, C + size);
            gl::kernels::cuda_gemm(version, M, N, K, A, B, c.data());
            return c;
        });
        if (out.size() != size) throw std::runtime_error("the recorded C has the wrong size");
        std::copy(out.begin(), out.end(), C);
    };
}

const Schedule kSchedules[] = {{Order::in_order, 0}, {Order::reverse, 0}, {Order::random, 3}};
const char* order_name(Order o) {
    return o == Order::in_order ? "in order" : o == Order::reverse ? "reverse" : "random";
}

/// Runs @p sgemm on every shape under every schedule and compares with the oracle; returns
/// what went wrong ("" when nothing did). Stops at the first exception (a kernel that
/// throws, or deadlocks, is broken whatever the shape).
std::string check(const Sgemm& sgemm, const std::vector<GemmShape>& shapes,
                  const std::vector<Schedule>& schedules) {
    std::ostringstream problems;
    for (const GemmShape& s : shapes)
        for (const Schedule& schedule : schedules) {
            gl::cuda::cpu::ScopedSchedule scope(schedule);
            const auto A = gl::test::random_matrix(std::size_t(s.M) * s.K, 1);
            const auto B = gl::test::random_matrix(std::size_t(s.K) * s.N, 2);
            std::vector<float> C(std::size_t(s.M) * s.N, NAN);  // an element never written stays wrong
            const std::string where = gl::test::shape_name(s) + " (M x N x K), threads " +
                                      order_name(schedule.order) + ": ";
            try {
                sgemm(s.M, s.N, s.K, A.data(), B.data(), C.data());
            } catch (const std::exception& e) {
                problems << where << e.what() << "\n";
                return problems.str();
            }
            const std::string wrong = gl::test::mismatches(s, C, gl::test::reference_gemm(s, A, B));
            if (!wrong.empty()) problems << where << "\n" << wrong << "\n";
        }
    return problems.str();
}

std::vector<Schedule> all_schedules() { return {std::begin(kSchedules), std::end(kSchedules)}; }

// Shapes that are multiples of no tile: edges in every direction, K shorter and longer than
// a tile, a single element.
const std::vector<GemmShape> kOddShapes = {{1, 1, 1}, {17, 33, 9}, {100, 75, 130}, {129, 7, 40}, {33, 65, 97}};

// ---- Memory traffic, counted ------------------------------------------------------------

/// What a counted run of a kernel moved, and whether it computed the right result.
struct Traffic {
    MemoryCounters counts;
    std::string wrong;  ///< "" when the result was right
};

Traffic count(const std::function<void(int, int, int, const float*, const float*, float*)>& counted,
              const GemmShape& s) {
    const auto A = gl::test::random_matrix(std::size_t(s.M) * s.K, 1);
    const auto B = gl::test::random_matrix(std::size_t(s.K) * s.N, 2);
    // Device memory is 256-byte aligned, as cudaMalloc's: both runs see the same sectors.
    DeviceVector<float> dA(A), dB(B), dC(std::size_t(s.M) * s.N);
    dC.fill_bytes(0xff);  // NaN: an element never written stays wrong
    gl::cuda::cpu::reset_memory_counters();
    Traffic t;
    try {
        counted(s.M, s.N, s.K, dA.get(), dB.get(), dC.get());
    } catch (const std::exception& e) {
        t.wrong = e.what();
        return t;
    }
    t.counts = gl::cuda::cpu::memory_counters();
    t.wrong = gl::test::mismatches(s, dC.to_host(), gl::test::reference_gemm(s, A, B));
    return t;
}

/// The counters as numbers, for the record of the student's run.
using Counts = std::vector<std::uint64_t>;
Counts to_numbers(const MemoryCounters& c) {
    Counts out;
    for (const auto* a : {&c.global_loads, &c.global_stores, &c.shared_loads, &c.shared_stores})
        out.insert(out.end(), {a->requests, a->thread_accesses, a->bytes, a->sectors, a->wavefronts, a->bank_conflicts});
    return out;
}
MemoryCounters from_numbers(const Counts& n) {
    MemoryCounters c;
    if (n.size() != 24) throw std::runtime_error("the recorded counts are malformed");
    std::size_t i = 0;
    for (auto* a : {&c.global_loads, &c.global_stores, &c.shared_loads, &c.shared_stores}) {
        a->requests = n[i++], a->thread_accesses = n[i++], a->bytes = n[i++];
        a->sectors = n[i++], a->wavefronts = n[i++], a->bank_conflicts = n[i++];
    }
    return c;
}

/// The counts of your version @p version (@p reference false) or the reference's on @p s.
/// Counting is slow, so each is measured once per process: the tests of one kernel share it.
/// Yours are counted in your process and recorded with C (or the exception's message);
/// the result is checked where the test runs.
const Traffic& counted(bool reference, int version, const GemmShape& s) {
    static std::map<std::tuple<bool, int, int, int, int>, Traffic> cache;
    const auto key = std::make_tuple(reference, version, s.M, s.N, s.K);
    if (const auto hit = cache.find(key); hit != cache.end()) return hit->second;
    if (reference) {
        const Traffic t = count([version](int M, int N, int K, const float* A, const float* B, float* C) {
            gl::kernels::cuda::lab03_reference::launch_sgemm<gl::cuda::Counted>(version, M, N, K, A, B, C);
        }, s);
        return cache.emplace(key, t).first->second;
    }
    const auto [numbers, C, error] = gl::graded::student<std::tuple<Counts, std::vector<float>, std::string>>(
        "counted version " + std::to_string(version), [&] {
            const auto A = gl::test::random_matrix(std::size_t(s.M) * s.K, 1);
            const auto B = gl::test::random_matrix(std::size_t(s.K) * s.N, 2);
            DeviceVector<float> dA(A), dB(B), dC(std::size_t(s.M) * s.N);
            dC.fill_bytes(0xff);  // NaN: an element never written stays wrong
            gl::cuda::cpu::reset_memory_counters();
            try {
                gl::kernels::cuda_gemm_counted(version, s.M, s.N, s.K, dA.get(), dB.get(), dC.get());
            } catch (const std::exception& e) {
                return std::tuple{Counts{}, std::vector<float>{}, std::string(e.what())};
            }
            return std::tuple{to_numbers(gl::cuda::cpu::memory_counters()), dC.to_host(), std::string()};
        });
    Traffic t;
    t.wrong = error;
    if (error.empty()) {
        t.counts = from_numbers(numbers);
        const auto A = gl::test::random_matrix(std::size_t(s.M) * s.K, 1);
        const auto B = gl::test::random_matrix(std::size_t(s.K) * s.N, 2);
        t.wrong = C.size() == std::size_t(s.M) * s.N ? gl::test::mismatches(s, C, gl::test::reference_gemm(s, A, B))
                                                     : "C has the wrong size";
    }
    return cache.emplace(key, t).first->second;
}

/// Global-memory sectors, loads and stores: what a GPU's memory system really moves.
std::uint64_t global_sectors(const MemoryCounters& c) { return c.global_loads.sectors + c.global_stores.sectors; }
/// Shared-memory wavefronts, loads and stores: 1 per request without bank conflicts.
std::uint64_t shared_wavefronts(const MemoryCounters& c) { return c.shared_loads.wavefronts + c.shared_stores.wavefronts; }

std::string describe(const MemoryCounters& c) {
    std::ostringstream out;
    out << "global loads: " << c.global_loads.requests << " requests, " << c.global_loads.sectors << " sectors ("
        << c.global_loads.sectors_per_request() << " per request); global stores: " << c.global_stores.requests
        << " requests, " << c.global_stores.sectors << " sectors; shared loads: " << c.shared_loads.requests
        << " requests, " << c.shared_loads.wavefronts << " wavefronts; shared stores: " << c.shared_stores.requests
        << " requests, " << c.shared_stores.wavefronts << " wavefronts";
    return out.str();
}

/// Passes when your kernel is right and its @p what (a count) is at most @p limit times
/// the reference kernel's on shape @p s.
void expect_traffic_within(int version, const GemmShape& s, double limit, const char* what,
                           std::uint64_t (*measure)(const MemoryCounters&)) {
    const Traffic& mine = counted(false, version, s);
    ASSERT_EQ(mine.wrong, "") << "your kernel must be right before its traffic counts (" << gl::test::shape_name(s) << ")";
    const Traffic& ref = counted(true, version, s);
    ASSERT_EQ(ref.wrong, "") << "the reference kernel failed: tell the course staff";
    const double ratio = double(measure(mine.counts)) / double(measure(ref.counts));
    EXPECT_LE(ratio, limit) << "on " << gl::test::shape_name(s) << " your kernel's " << what << ": "
                            << measure(mine.counts) << ", the reference's: " << measure(ref.counts) << ", ratio "
                            << ratio << " (full points at <= " << limit << ")\n  yours:     " << describe(mine.counts)
                            << "\n  reference: " << describe(ref.counts);
    testing::Test::RecordProperty("ratio", std::to_string(ratio));
}

// The shapes whose traffic is graded: several tiles and edges in each direction, small
// enough to count quickly.
constexpr GemmShape kTrafficShape = {70, 45, 80};
constexpr GemmShape kRegisterBlockedTrafficShape = {130, 129, 40};  // 128 x 128 tiles

// ---- Task 1: the coalesced kernel -------------------------------------------------------

TEST(Lab03, CoalescedCorrectOnOddShapes) {
    EXPECT_EQ(check(yours(kCoalesced), kOddShapes, all_schedules()), "");
}

TEST(Lab03, CoalescedGlobalSectors) {
    // A warp that walks along a row of C reads 4 sectors of B and 1 of A per step of k;
    // one that walks down a column reads 32 + 1.
    expect_traffic_within(kCoalesced, kTrafficShape, 1.1, "global-memory sectors", global_sectors);
}

// ---- Task 2: the shared-memory tiled kernel ---------------------------------------------

TEST(Lab03, TiledCorrectOnOddShapes) {
    EXPECT_EQ(check(yours(kTiled), kOddShapes, all_schedules()), "");
}

TEST(Lab03, TiledCorrectOnALargerShapeUnderRandomSchedules) {
    const std::vector<Schedule> seeds = {{Order::random, 11}, {Order::random, 12}};
    EXPECT_EQ(check(yours(kTiled), {{161, 97, 200}}, seeds), "");
}

TEST(Lab03, TiledGlobalTrafficWithin2x) {
    expect_traffic_within(kTiled, kTrafficShape, 2.0, "global-memory sectors", global_sectors);
}

TEST(Lab03, TiledGlobalTrafficWithin1_1x) {
    expect_traffic_within(kTiled, kTrafficShape, 1.1, "global-memory sectors", global_sectors);
}

TEST(Lab03, TiledSharedWavefronts) {
    // Bank conflicts make a request take several wavefronts.
    expect_traffic_within(kTiled, kTrafficShape, 1.1, "shared-memory wavefronts", shared_wavefronts);
}

void tiled_sgemm(const gl::kernels::GemmArgs<float>& args) { gl::kernels::cuda_gemm_strided(kTiled, args); }

TEST(Lab03, TiledRunsATrainingStep) {
    // Your kernel inside the framework: registered as a GEMM kernel, it computes the
    // forward and backward passes of a small network (transposed operands included).
    const auto got = gl::graded::student<std::vector<std::vector<float>>>("training step", [] {
        gl::kernels::register_gemm({"lab03_tiled", "your shared-memory tiled kernel on the CPU runtime", &tiled_sgemm});
        return gl::test::loss_and_gradients("lab03_tiled");
    });
    EXPECT_EQ(gl::test::step_differences("your tiled kernel", got), "");
}

// ---- Extra: the register-blocked kernel -------------------------------------------------

TEST(Lab03, RegisterBlockedCorrectOnOddShapes) {
    // Tiles of 128 x 128: shapes around and beyond one tile.
    const std::vector<GemmShape> shapes = {{1, 1, 1}, {17, 33, 9}, {129, 130, 20}, {200, 75, 33}};
    EXPECT_EQ(check(yours(kRegisterBlocked), shapes, all_schedules()), "");
}

TEST(Lab03, RegisterBlockedGlobalSectors) {
    expect_traffic_within(kRegisterBlocked, kRegisterBlockedTrafficShape, 1.1, "global-memory sectors",
                          global_sectors);
}

// ---- The grader catches broken kernels (not graded) -------------------------------------

/// Launches a variant of the tiled kernel exactly as sgemm.cuh launches version 3.
template <void (*Kernel)(int, int, int, const float*, const float*, float*)>
void launch_tiled_variant(int M, int N, int K, const float* A, const float* B, float* C) {
    using gl::kernels::cuda::lab03_reference::ceil_div;
    gl::cuda::launch(Kernel, dim3(ceil_div(N, 32), ceil_div(M, 32)), dim3(32 * 32), 0, M, N, K, A, B, C);
}

namespace cuda = gl::kernels::cuda;

/// The graded correctness check fails @p broken under every schedule on its own, not just
/// under one of them.
void expect_caught_under_every_schedule(const Sgemm& broken, const char* what) {
    for (const Schedule& schedule : kSchedules)
        EXPECT_NE(check(broken, kOddShapes, {schedule}), "")
            << "the reference tiled kernel " << what << " passed with threads " << order_name(schedule.order);
}

TEST(Lab03Grader, TiledCheckFailsWithoutTheBarrierAfterLoading) {
    expect_caught_under_every_schedule(launch_tiled_variant<cuda::lab03_no_load_barrier::sgemm_3_smem_tiled<32>>,
                                       "without its first __syncthreads");
}

TEST(Lab03Grader, TiledCheckFailsWithoutTheBarrierBeforeReuse) {
    expect_caught_under_every_schedule(launch_tiled_variant<cuda::lab03_no_reuse_barrier::sgemm_3_smem_tiled<32>>,
                                       "without its second __syncthreads");
}

TEST(Lab03Grader, DeadlockIsReportedNotHung) {
    const std::string problems =
        check(launch_tiled_variant<cuda::lab03_divergent_barrier::sgemm_3_smem_tiled<32>>, kOddShapes, all_schedules());
    EXPECT_NE(problems.find("barrier_divergence"), std::string::npos) << problems;
}

TEST(Lab03Grader, ReferenceKernelsPassTheirOwnChecks) {
    for (int v : {kCoalesced, kTiled, kRegisterBlocked}) {
        const Sgemm reference = [v](int M, int N, int K, const float* A, const float* B, float* C) {
            cuda::lab03_reference::launch_sgemm<gl::cuda::Direct>(v, M, N, K, A, B, C);
        };
        EXPECT_EQ(check(reference, kOddShapes, all_schedules()), "") << "reference version " << v;
    }
}

}  // namespace
