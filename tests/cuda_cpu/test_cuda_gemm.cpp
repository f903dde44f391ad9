// Tests of the CUDA SGEMM family (core/kernels/cuda/): every version against a plain
// triple loop in double, on the CPU runtime under several thread schedules and on a GPU
// when there is one; and claim GPU-2 made exact with the memory counters: tiling cuts
// global loads by the tile factor, coalescing cuts the sectors each request touches.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "cuda_cpu/cpu_runtime.hpp"
#include "cuda_cpu/memory_counters.hpp"
#include "device_vector.hpp"
#include "kernels/cuda/sgemm.hpp"
#include "testkit/gemm_oracle.hpp"
#include "testkit/random.hpp"
#if GRADLAB_HAVE_CUDA
#include "cuda_cpu/device_status.hpp"
#endif

namespace {

using gl::cuda::cpu::Order;
using gl::cuda::cpu::Schedule;
using gl::test::DeviceVector;

using Shape = gl::testkit::GemmShape;
using gl::testkit::random_floats;
using gl::testkit::reference_gemm;
using gl::testkit::shape_name;

void expect_matches(const Shape& s, const std::vector<float>& C, const gl::testkit::ReferenceGemm& ref) {
    EXPECT_EQ(gl::testkit::mismatches(s, C, ref), "");
}

const Shape kShapes[] = {{1, 1, 1}, {17, 33, 9}, {64, 64, 64}, {100, 75, 130}, {129, 7, 40}};

// ---------------------------------------------------------------------------------------
// Every version on the CPU runtime, under three schedules

struct CpuCase {
    int version;
    Shape shape;
    Schedule schedule;
};

class CudaGemm : public testing::TestWithParam<CpuCase> {};

TEST_P(CudaGemm, MatchesTheTripleLoop) {
    const CpuCase& c = GetParam();
    const Shape s = c.shape;
    gl::cuda::cpu::ScopedSchedule scope(c.schedule);
    const auto A = random_floats(std::size_t(s.M) * s.K, 1);
    const auto B = random_floats(std::size_t(s.K) * s.N, 2);
    DeviceVector<float> dA(A), dB(B), dC(std::size_t(s.M) * s.N);
    dC.fill_bytes(0xff);  // NaN: an element the kernel forgets to write cannot pass
    gl::kernels::cuda_gemm(c.version, s.M, s.N, s.K, dA.get(), dB.get(), dC.get());
    expect_matches(s, dC.to_host(), reference_gemm(s, A, B));
}

std::vector<CpuCase> cpu_cases() {
    const Schedule schedules[] = {{Order::in_order, 0}, {Order::reverse, 0}, {Order::random, 3}};
    std::vector<CpuCase> cases;
    for (const auto& v : gl::kernels::cuda_sgemm_versions())
        for (const Shape& s : kShapes)
            for (const Schedule& sched : schedules) cases.push_back({v.number, s, sched});
    return cases;
}

std::string cpu_case_name(const testing::TestParamInfo<CpuCase>& info) {
    const CpuCase& c = info.param;
    const char* order = c.schedule.order == Order::in_order  ? "in_order"
                        : c.schedule.order == Order::reverse ? "reverse"
                                                             : "random";
    return "v" + std::to_string(c.version) + "_" + shape_name(c.shape) + "_" + order;
}

INSTANTIATE_TEST_SUITE_P(AllVersions, CudaGemm, testing::ValuesIn(cpu_cases()), cpu_case_name);

TEST(CudaGemmApi, UnknownVersionAndEmptyShapes) {
    float x = 0;
    EXPECT_THROW(gl::kernels::cuda_gemm(7, 1, 1, 1, &x, &x, &x), gl::Error);
    gl::kernels::cuda_gemm(3, 0, 5, 5, &x, &x, &x);  // nothing to do
    std::vector<float> C(6, 1.0f);
    gl::kernels::cuda_gemm(5, 2, 3, 0, &x, &x, C.data());  // K = 0: C = 0
    EXPECT_EQ(C, std::vector<float>(6, 0.0f));
}

// ---------------------------------------------------------------------------------------
// GPU-2, exact: what tiling and coalescing do to global-memory traffic

gl::cuda::cpu::MemoryCounters count(int version, const Shape& s) {
    const auto A = random_floats(std::size_t(s.M) * s.K, 1);
    const auto B = random_floats(std::size_t(s.K) * s.N, 2);
    DeviceVector<float> dA(A), dB(B), dC(std::size_t(s.M) * s.N);
    gl::cuda::cpu::reset_memory_counters();
    gl::kernels::cuda_gemm_counted(version, s.M, s.N, s.K, dA.get(), dB.get(), dC.get());
    expect_matches(s, dC.to_host(), reference_gemm(s, A, B));  // counting changes nothing
    return gl::cuda::cpu::memory_counters();
}

TEST(CudaGemmCounters, TilingCutsGlobalLoadsByTheTileFactor) {
    const Shape s{64, 64, 64};
    const std::uint64_t MNK = std::uint64_t(s.M) * s.N * s.K;
    const std::uint64_t tile = 32;
    const auto naive = count(1, s), coalesced = count(2, s), tiled = count(3, s);
    // Without tiling every thread reads its row of A and column of B: 2*K loads per output.
    EXPECT_EQ(naive.global_loads.thread_accesses, 2 * MNK);
    EXPECT_EQ(coalesced.global_loads.thread_accesses, 2 * MNK);
    // With 32 x 32 tiles every element brought into shared memory serves 32 outputs.
    EXPECT_EQ(tiled.global_loads.thread_accesses, 2 * MNK / tile);
    EXPECT_EQ(tiled.global_loads.bytes * tile, naive.global_loads.bytes);
    EXPECT_DOUBLE_EQ(double(naive.global_loads.bytes) / double(tiled.global_loads.bytes), 32.0);
    // The loads moved to shared memory (2*K per output again), without bank conflicts:
    // a warp reads one row of As (broadcast) and 32 consecutive floats of Bs.
    EXPECT_EQ(tiled.shared_loads.thread_accesses, 2 * MNK);
    EXPECT_EQ(tiled.shared_loads.bank_conflicts, 0u);
    EXPECT_EQ(tiled.shared_stores.bank_conflicts, 0u);
    // Stores to C are the same M*N in every version.
    EXPECT_EQ(naive.global_stores.thread_accesses, std::uint64_t(s.M) * s.N);
    EXPECT_EQ(tiled.global_stores.thread_accesses, std::uint64_t(s.M) * s.N);
}

TEST(CudaGemmCounters, CoalescingCutsSectorsPerRequest) {
    const Shape s{64, 64, 64};
    const std::uint64_t warps = std::uint64_t(s.M) * s.N / 32;  // one output per thread
    const std::uint64_t loads = warps * s.K;                    // requests per matrix
    const auto naive = count(1, s), coalesced = count(2, s);
    // Per step of the k loop each warp issues one load of A and one of B.
    EXPECT_EQ(naive.global_loads.requests, 2 * loads);
    EXPECT_EQ(coalesced.global_loads.requests, 2 * loads);
    // Version 1: the warp's 32 threads own 32 rows. A: 32 floats K*4 = 256 bytes apart,
    // 32 sectors; B: one float for all, 1 sector. C: a column, 32 sectors per store.
    EXPECT_EQ(naive.global_loads.sectors, loads * (32 + 1));
    EXPECT_EQ(naive.global_stores.requests, warps);
    EXPECT_EQ(naive.global_stores.sectors, warps * 32);
    // Version 2: the warp owns 32 columns of one row. A: one float for all, 1 sector; B: 32
    // consecutive floats, 128 bytes, 4 sectors. C: 4 sectors per store.
    EXPECT_EQ(coalesced.global_loads.sectors, loads * (1 + 4));
    EXPECT_EQ(coalesced.global_stores.sectors, warps * 4);
    EXPECT_DOUBLE_EQ(naive.global_stores.sectors_per_request(), 32.0);
    EXPECT_DOUBLE_EQ(coalesced.global_stores.sectors_per_request(), 4.0);
}

TEST(CudaGemmCounters, EveryVersionReadsWhatItsTilesPredict) {
    const Shape s{128, 128, 128};
    const std::uint64_t MNK = std::uint64_t(s.M) * s.N * s.K;
    // A block with a BM x BN tile of C reads its BM rows of A and BN columns of B once:
    // 4 * (MNK/BN + MNK/BM) bytes in all.
    auto tiled_bytes = [&](std::uint64_t BM, std::uint64_t BN) { return 4 * (MNK / BN + MNK / BM); };
    const std::uint64_t expected[] = {4 * 2 * MNK, 4 * 2 * MNK, tiled_bytes(32, 32),
                                      tiled_bytes(64, 64), tiled_bytes(128, 128), tiled_bytes(128, 128)};
    gl::cuda::cpu::MemoryCounters c[6];
    for (int v = 1; v <= 6; ++v) {
        c[v - 1] = count(v, s);
        EXPECT_EQ(c[v - 1].global_loads.bytes, expected[v - 1]) << "version " << v;
        RecordProperty("v" + std::to_string(v) + "_global_load_bytes",
                       std::to_string(c[v - 1].global_loads.bytes));
    }
    // Version 6 moves the same bytes as version 5 in a quarter of the requests (float4).
    EXPECT_EQ(c[5].global_loads.requests * 4, c[4].global_loads.requests);
    EXPECT_EQ(c[5].global_stores.requests * 4, c[4].global_stores.requests);
}

// ---------------------------------------------------------------------------------------
// Every version on a GPU, when there is one

struct DeviceCase {
    int version;
    Shape shape;
};

class CudaGemmDevice : public testing::TestWithParam<DeviceCase> {};

TEST_P(CudaGemmDevice, MatchesTheTripleLoop) {
#if !GRADLAB_HAVE_CUDA
    GTEST_SKIP() << "needs a CUDA device: this build has no CUDA (nvcc was not found when "
                    "meson configured it)";
#else
    const gl::cuda::DeviceStatus status = gl::cuda::device_status();
    if (!status.available) GTEST_SKIP() << "needs a CUDA device: " << status.message;
    const DeviceCase& c = GetParam();
    const Shape s = c.shape;
    const auto A = random_floats(std::size_t(s.M) * s.K, 1);
    const auto B = random_floats(std::size_t(s.K) * s.N, 2);
    std::vector<float> C(std::size_t(s.M) * s.N, NAN);
    gl::kernels::cuda_gemm_device_from_host(c.version, s.M, s.N, s.K, A.data(), B.data(), C.data());
    expect_matches(s, C, reference_gemm(s, A, B));
#endif
}

std::vector<DeviceCase> device_cases() {
    std::vector<DeviceCase> cases;
    for (const auto& v : gl::kernels::cuda_sgemm_versions()) {
        for (const Shape& s : kShapes) cases.push_back({v.number, s});
        cases.push_back({v.number, {513, 257, 1000}});
        cases.push_back({v.number, {1024, 1024, 1024}});
    }
    return cases;
}

INSTANTIATE_TEST_SUITE_P(AllVersions, CudaGemmDevice, testing::ValuesIn(device_cases()),
                         [](const testing::TestParamInfo<DeviceCase>& info) {
                             return "v" + std::to_string(info.param.version) + "_" +
                                    shape_name(info.param.shape);
                         });

}  // namespace
