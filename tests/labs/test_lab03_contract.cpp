// Lab 03 contract tests: each graded CUDA kernel (on the CPU runtime) with its operands between
// canary guard zones, under three thread schedules. The guard zones are signalling NaNs: a kernel
// that reads past the end of A or B (a tile loaded without its K check) picks one up and turns a
// row of C into NaN, and a kernel that writes past C (an edge thread without its column check)
// overwrites one, even in a release build. A and B also hold an infinity and a NaN: the rows and
// columns they reach must be inf/NaN exactly as the arithmetic says, and no other element may be
// touched by them (a tile that reads A past column K takes the next row's values, times a zero of
// B: harmless for finite values, NaN for an infinity). The student's code is called only through
// graded::student (graded.hpp), each call one small lambda that returns everything the checks read,
// so a checker that never loads it can decide.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "contract.hpp"
#include "graded.hpp"
#include "cuda_cpu/cpu_runtime.hpp"
#include "kernels/cuda/sgemm.hpp"

namespace gl {
namespace {

using cuda::cpu::Order;
using cuda::cpu::Schedule;

struct Shape {
    int M, N, K;
};

// Sizes above every tile (32 for versions 2 and 3; 128 x 128 x 8 for version 5) and odd
// remainders in every direction.
std::vector<Shape> contract_shapes() {
    Rng rng(31);
    std::vector<Shape> shapes{{33, 47, 45}, {70, 66, 37}, {5, 130, 9}, {131, 3, 70}};
    for (int i = 0; i < 2; ++i)
        shapes.push_back({static_cast<int>(labs::pick(rng, 1, 40)), static_cast<int>(labs::pick(rng, 1, 40)),
                          static_cast<int>(labs::pick(rng, 1, 40))});
    return shapes;
}

void expect_kernel_keeps_contract(int version, const std::string& name) {
    for (const Shape& s : contract_shapes())
        for (const Schedule schedule : {Schedule{Order::in_order, 0}, Schedule{Order::reverse, 0}, Schedule{Order::random, 5}}) {
            Rng rng(static_cast<std::uint64_t>(s.M * 7919 + s.N * 31 + s.K));
            const auto guard_a = static_cast<std::size_t>(16 * s.K + 64), guard_b = static_cast<std::size_t>(16 * s.N + 64);
            labs::Guarded<float> A(static_cast<std::size_t>(s.M) * s.K, guard_a), B(static_cast<std::size_t>(s.K) * s.N, guard_b);
            labs::Guarded<float> C(static_cast<std::size_t>(s.M) * s.N);
            for (std::size_t i = 0; i < A.size(); ++i) A[i] = static_cast<float>(rng.uniform(-1, 1));
            for (std::size_t i = 0; i < B.size(); ++i) B[i] = static_cast<float>(rng.uniform(-1, 1));
            for (std::size_t i = 0; i < C.size(); ++i) C[i] = std::numeric_limits<float>::quiet_NaN();
            // An infinity at the start of A's last row and a NaN in B's first row.
            if (s.M > 1) A[static_cast<std::size_t>(s.M - 1) * s.K] = std::numeric_limits<float>::infinity();
            if (s.N > 1) B[static_cast<std::size_t>(s.N / 2)] = std::numeric_limits<float>::quiet_NaN();
            auto run = [&]() -> std::vector<float> {
                cuda::cpu::ScopedSchedule scope(schedule);
                kernels::cuda_gemm(version, s.M, s.N, s.K, A.data(), B.data(), C.data());
                return C.all();
            };
            const std::vector<float> got = graded::student<std::vector<float>>(name, run);
            const std::string where = name + ", " + std::to_string(s.M) + " x " + std::to_string(s.N) + " x " +
                                      std::to_string(s.K) + " (M x N x K), threads " +
                                      (schedule.order == Order::in_order ? "in order" : schedule.order == Order::reverse ? "reverse" : "random");
            ASSERT_EQ(labs::guard_damage(got, C.guard()), "") << where << ": wrote past C";
            for (int i = 0; i < s.M; ++i)
                for (int j = 0; j < s.N; ++j) {
                    double want = 0;
                    for (int k = 0; k < s.K; ++k)
                        want += static_cast<double>(A[static_cast<std::size_t>(i) * s.K + k]) * B[static_cast<std::size_t>(k) * s.N + j];
                    const float value = got[C.guard() + static_cast<std::size_t>(i) * s.N + j];
                    const std::string at = where + ": C(" + std::to_string(i) + ", " + std::to_string(j) + ")";
                    if (std::isnan(want)) {
                        ASSERT_TRUE(std::isnan(value)) << at << " must be NaN (a NaN or an infinity times 0 reaches it)";
                    } else if (std::isinf(want)) {
                        ASSERT_EQ(value, static_cast<float>(want)) << at;
                    } else {
                        ASSERT_NEAR(value, want, 1e-4 * std::sqrt(static_cast<double>(s.K)) + 1e-6)
                            << at << (std::isnan(value) ? ": NaN where A and B hold only finite values for it: did a "
                                                          "tile read past the end of a row of A, or past B?"
                                                        : "");
                    }
                }
        }
}

TEST(Lab03, ContractCoalesced) { expect_kernel_keeps_contract(2, "coalesced kernel"); }
TEST(Lab03, ContractTiled) { expect_kernel_keeps_contract(3, "tiled kernel"); }
TEST(Lab03, ContractRegisterBlocked) { expect_kernel_keeps_contract(5, "register-blocked kernel"); }

}  // namespace
}  // namespace gl
