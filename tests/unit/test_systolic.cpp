// The systolic array simulator (core/systolic/) against the reference GEMM: exact int8 ->
// int32 results and float results to tolerance on shapes that are not multiples of the
// array, every count equal to its closed form, operands read once per tile pass against
// the scalar loop's reads, the wavefront of the trace, and the energy sum.
#include <gtest/gtest.h>

#include <cmath>

#include "base/rng.hpp"
#include "systolic/energy.hpp"
#include "systolic/systolic.hpp"
#include "systolic/weight_stationary.hpp"
#include "testkit/systolic_cases.hpp"

namespace gl::systolic {
namespace {

using testkit::random_float_matrix;
using testkit::random_int8_matrix;
using testkit::reference_int8_gemm;

struct Shape {
    std::int64_t M, N, K;
};

// Random shapes up to 300 x 300 x 300 (most not multiples of 8 or 16), and the extremes.
std::vector<Shape> test_shapes() {
    std::vector<Shape> shapes{{1, 1, 1}, {300, 300, 300}, {17, 1, 33}, {1, 40, 7}};
    Rng rng(14);
    for (int i = 0; i < 8; ++i)
        shapes.push_back({static_cast<std::int64_t>(1 + rng.below(300)), static_cast<std::int64_t>(1 + rng.below(300)),
                          static_cast<std::int64_t>(1 + rng.below(300))});
    return shapes;
}

std::string describe(const Shape& s, ArrayShape a, Dataflow f) {
    return std::to_string(s.M) + "x" + std::to_string(s.N) + "x" + std::to_string(s.K) + " on " +
           std::to_string(a.rows) + "x" + std::to_string(a.cols) + " " + to_string(f);
}

TEST(Systolic, Int8ResultsExactAndCountsEqualTheClosedForm) {
    std::uint64_t seed = 100;
    for (const Shape& s : test_shapes()) {
        const auto A = random_int8_matrix(s.M, s.K, ++seed);
        const auto B = random_int8_matrix(s.K, s.N, ++seed);
        const auto expected = reference_int8_gemm(A, B);
        for (const ArrayShape array : {ArrayShape{8, 8}, ArrayShape{16, 16}})
            for (const Dataflow flow : {Dataflow::WeightStationary, Dataflow::OutputStationary}) {
                const auto run = systolic_gemm(A, B, array, flow);
                EXPECT_EQ(run.C.data, expected.data) << describe(s, array, flow);
                EXPECT_EQ(run.counts, closed_form(s.M, s.N, s.K, array, flow)) << describe(s, array, flow);
            }
    }
}

TEST(Systolic, RectangularArraysCountByTheClosedFormToo) {
    const auto A = random_int8_matrix(23, 19, 1), B = random_int8_matrix(19, 11, 2);
    for (const ArrayShape array : {ArrayShape{1, 1}, ArrayShape{3, 5}, ArrayShape{7, 2}, ArrayShape{32, 32}})
        for (const Dataflow flow : {Dataflow::WeightStationary, Dataflow::OutputStationary}) {
            const auto run = systolic_gemm(A, B, array, flow);
            EXPECT_EQ(run.C.data, reference_int8_gemm(A, B).data) << describe({23, 11, 19}, array, flow);
            EXPECT_EQ(run.counts, closed_form(23, 11, 19, array, flow)) << describe({23, 11, 19}, array, flow);
        }
}

TEST(Systolic, ClosedFormCyclesByHand) {
    // 5 x 3 x 4 on a 2 x 2 array: Tk = 2, Tn = 2, Tm = 3.
    EXPECT_EQ(closed_form(5, 3, 4, {2, 2}, Dataflow::WeightStationary).cycles, 4 * (2 + 5 + 2 + 2 - 2));
    EXPECT_EQ(closed_form(5, 3, 4, {2, 2}, Dataflow::OutputStationary).cycles, 6 * (4 + 2 + 2 - 2 + 2));
}

TEST(Systolic, FloatResultsWithinTolerance) {
    const auto A = random_float_matrix(37, 53, 3), B = random_float_matrix(53, 29, 4);
    const auto expected = testkit::reference_float_gemm(A, B);
    for (const Dataflow flow : {Dataflow::WeightStationary, Dataflow::OutputStationary}) {
        const auto run = systolic_gemm(A, B, {8, 8}, flow);
        for (std::size_t i = 0; i < expected.data.size(); ++i)
            ASSERT_NEAR(run.C.data[i], expected.data[i], 1e-4) << "element " << i << ", " << to_string(flow);
        EXPECT_EQ(run.counts, closed_form(37, 29, 53, {8, 8}, flow));
    }
}

TEST(Systolic, OperandsReadOncePerTilePassAgainstTheScalarLoop) {
    const std::int64_t M = 50, N = 40, K = 30;
    const auto A = random_int8_matrix(M, K, 5), B = random_int8_matrix(K, N, 6);
    const auto scalar = scalar_gemm(A, B);
    EXPECT_EQ(scalar.C.data, reference_int8_gemm(A, B).data);
    EXPECT_EQ(scalar.counts.a_reads, M * N * K);  // the scalar loop reads both operands for every MAC
    EXPECT_EQ(scalar.counts.b_reads, M * N * K);
    const auto ws = systolic_gemm(A, B, {8, 8}, Dataflow::WeightStationary);
    const std::int64_t column_blocks = (N + 7) / 8, row_blocks = (M + 7) / 8;
    EXPECT_EQ(ws.counts.b_reads, K * N) << "each weight is read once";
    EXPECT_EQ(ws.counts.a_reads, column_blocks * M * K) << "A is read once per block of C's columns";
    EXPECT_EQ(ws.counts.c_writes, M * N);
    const auto os = systolic_gemm(A, B, {8, 8}, Dataflow::OutputStationary);
    EXPECT_EQ(os.counts.a_reads, column_blocks * M * K);
    EXPECT_EQ(os.counts.b_reads, row_blocks * K * N);
    EXPECT_LT(ws.counts.a_reads + ws.counts.b_reads, (scalar.counts.a_reads + scalar.counts.b_reads) / 4);
}

// The wavefront: in a weight-stationary pass, cell (r, c) multiplies A's row m at
// streaming cycle m + r + c, so the active cells form anti-diagonal bands.
TEST(Systolic, TraceShowsTheWavefront) {
    const std::int64_t M = 3, N = 2, K = 2;
    const ArrayShape array{2, 2};
    const auto A = random_int8_matrix(M, K, 7), B = random_int8_matrix(K, N, 8);
    Trace trace;
    const auto run = systolic_gemm(A, B, array, Dataflow::WeightStationary, &trace);
    ASSERT_EQ(static_cast<std::int64_t>(trace.frames.size()), run.counts.cycles);
    std::int64_t t = 0;
    for (const TraceFrame& f : trace.frames) {
        if (f.phase != "stream") continue;
        for (std::int64_t r = 0; r < 2; ++r)
            for (std::int64_t c = 0; c < 2; ++c) {
                const std::int64_t m = t - r - c;
                EXPECT_EQ(f.cells[r * 2 + c].mac, m >= 0 && m < M) << "cycle " << t << " cell " << r << "," << c;
            }
        ++t;
    }
    EXPECT_EQ(t, M + 2 + 2 - 2);
    const std::string text = format_trace(trace);
    EXPECT_NE(text.find("cycle 0 (pass 0, load weights)"), std::string::npos) << text;
    EXPECT_NE(text.find("*"), std::string::npos);
    Trace too_big;
    const auto big = random_int8_matrix(300, 300, 9);
    EXPECT_THROW(systolic_gemm(big, big, {64, 64}, Dataflow::WeightStationary, &too_big), Error);
}

TEST(Systolic, BadShapesAreRefusedWithAMessage) {
    const auto A = random_int8_matrix(4, 5, 1), B = random_int8_matrix(6, 3, 2);
    try {
        systolic_gemm(A, B, {4, 4}, Dataflow::WeightStationary);
        FAIL() << "mismatched inner dimensions were accepted";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("inner dimensions"), std::string::npos) << e.what();
    }
    EXPECT_THROW(systolic_gemm(A, random_int8_matrix(5, 3, 3), {0, 4}, Dataflow::OutputStationary), Error);
}

TEST(Systolic, CellStepAddsOnlyRealProducts) {
    WsCell<std::int8_t> cell;
    cell.weight = {-128, true};
    const auto next = ws_cell_step<std::int8_t>(cell, {-128, true}, {5, true});
    EXPECT_EQ(next.psum.value, 5 + 16384);
    EXPECT_TRUE(next.a.valid);
    EXPECT_EQ(next.weight.value, -128);
    const auto bubble = ws_cell_step<std::int8_t>(cell, {}, {7, true});
    EXPECT_EQ(bubble.psum.value, 7);
    EXPECT_FALSE(bubble.a.valid);
}

TEST(Systolic, EnergyIsTheSumOfPricedEvents) {
    Counts c;
    c.macs = 10, c.operand_hops = 4, c.psum_hops = 2, c.a_reads = 3, c.b_reads = 1, c.c_writes = 2, c.dram_reads = 5;
    const EnergyTable t;
    const Energy e = estimate_energy<std::int8_t>(c, t);
    EXPECT_DOUBLE_EQ(e.mac_pj, 10 * 0.3);
    EXPECT_DOUBLE_EQ(e.hop_pj, (4 * 1 + 2 * 4) * 0.3);
    EXPECT_DOUBLE_EQ(e.sram_pj, (4 * 1 + 2 * 4) * 2.5);
    EXPECT_DOUBLE_EQ(e.dram_pj, 5 * 162.5);
    // The array spends less per MAC than the scalar loop, which pays two SRAM reads per MAC.
    const auto A = random_int8_matrix(64, 64, 1), B = random_int8_matrix(64, 64, 2);
    const double array = estimate_energy<std::int8_t>(systolic_gemm(A, B, {16, 16}, Dataflow::WeightStationary).counts).total_pj();
    const double scalar = estimate_energy<std::int8_t>(scalar_gemm(A, B).counts).total_pj();
    EXPECT_LT(array, scalar);
}

}  // namespace
}  // namespace gl::systolic
