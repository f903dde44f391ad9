// Lab 14 contract tests: every count of the simulator (multiply-adds, register hops, reads,
// writes, passes, cycles) equal to its closed form on random shapes and arrays, float and
// int8; and the wavefront of a traced run, cell by cell and cycle by cycle. The student's
// code is called only through graded::student (graded.hpp).
#include <gtest/gtest.h>

#include "base/rng.hpp"
#include "lab14_codecs.hpp"
#include "systolic/systolic.hpp"
#include "testkit/systolic_cases.hpp"

namespace gl {
namespace {

using namespace systolic;

TEST(Lab14, ContractEveryCountOnRandomShapes) {
    Rng rng(1414);
    for (int i = 0; i < 12; ++i) {
        const std::int64_t M = 1 + rng.below(40), N = 1 + rng.below(40), K = 1 + rng.below(40);
        const ArrayShape array{static_cast<std::int64_t>(1 + rng.below(9)), static_cast<std::int64_t>(1 + rng.below(9))};
        const auto A = testkit::random_int8_matrix(M, K, 2 * i), B = testkit::random_int8_matrix(K, N, 2 * i + 1);
        const auto [C, counts] = graded::student<std::pair<std::vector<std::int32_t>, Counts>>("random", [&] {
            auto run = systolic_gemm(A, B, array, Dataflow::WeightStationary);
            return std::make_pair(run.C.data, run.counts);
        });
        const std::string where = std::to_string(M) + "x" + std::to_string(N) + "x" + std::to_string(K) + " on " +
                                  std::to_string(array.rows) + "x" + std::to_string(array.cols);
        EXPECT_EQ(C, testkit::reference_int8_gemm(A, B).data) << where;
        const Counts f = closed_form(M, N, K, array, Dataflow::WeightStationary);
        EXPECT_EQ(counts.macs, f.macs) << where;
        EXPECT_EQ(counts.psum_hops, f.psum_hops) << where << ": a partial sum moves down R - 1 rows, with or without a "
                                                            "real weight in the cells it passes";
        EXPECT_EQ(counts.operand_hops, f.operand_hops) << where;
        EXPECT_EQ(counts, f) << where;
    }
}

// In a weight-stationary pass, cell (r, c) multiplies row m of A at streaming cycle m + r + c.
TEST(Lab14, ContractWavefrontOfATracedRun) {
    const std::int64_t M = 5, N = 3, K = 4;
    const ArrayShape array{4, 3};
    const auto A = testkit::random_int8_matrix(M, K, 9), B = testkit::random_int8_matrix(K, N, 10);
    const auto macs = graded::student<std::vector<std::vector<bool>>>("trace", [&] {
        Trace trace;
        systolic_gemm(A, B, array, Dataflow::WeightStationary, &trace);
        std::vector<std::vector<bool>> frames;
        for (const TraceFrame& f : trace.frames) {
            if (f.phase != "stream") continue;
            std::vector<bool> cells;
            for (const CellView& v : f.cells) cells.push_back(v.mac);
            frames.push_back(cells);
        }
        return frames;
    });
    ASSERT_EQ(static_cast<std::int64_t>(macs.size()), M + array.rows + array.cols - 2) << "streaming cycles";
    for (std::int64_t t = 0; t < static_cast<std::int64_t>(macs.size()); ++t)
        for (std::int64_t r = 0; r < array.rows; ++r)
            for (std::int64_t c = 0; c < array.cols; ++c) {
                const std::int64_t m = t - r - c;
                EXPECT_EQ(macs[t][r * array.cols + c], m >= 0 && m < M)
                    << "cycle " << t << ", cell (" << r << ", " << c << "): it multiplies row t - r - c of A";
            }
}

}  // namespace
}  // namespace gl
