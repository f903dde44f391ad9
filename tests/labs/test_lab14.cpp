// Lab 14 graded tests: one weight-stationary cell's step and the skewed feed of A, then the
// whole array built from them: exact int8 results on odd sizes, the exact cycle count and
// the read counts, all against the reference GEMM and the closed forms of
// labs/14-systolic/README.md. Points per test are in labs/14-systolic/rubric.json. Nothing
// is timed.
//
// The student's code is called only inside graded::student (graded.hpp): the grader records
// its results in a sandbox and checks them in this program built from the reference. The
// counts are counted by the simulator's framework code (the tile pass) inside the student's
// process, except A's reads, which the student's feed counts.
#include <gtest/gtest.h>

#include <tuple>

#include "lab14_codecs.hpp"
#include "systolic/systolic.hpp"
#include "systolic/weight_stationary.hpp"
#include "testkit/systolic_cases.hpp"

namespace gl {
namespace {

using namespace systolic;
using testkit::random_int8_matrix;

// Odd sizes on odd and even arrays: every tile of M, N and K partial somewhere.
struct Case {
    std::int64_t M, N, K;
    ArrayShape array;
};
const std::vector<Case> kOddCases{{1, 1, 1, {3, 3}},    {7, 5, 3, {4, 4}},      {9, 13, 11, {3, 5}},
                                  {33, 17, 29, {8, 8}}, {101, 77, 55, {16, 16}}, {15, 31, 7, {5, 2}}};

std::string describe(const Case& c) {
    return std::to_string(c.M) + "x" + std::to_string(c.N) + "x" + std::to_string(c.K) + " on a " +
           std::to_string(c.array.rows) + "x" + std::to_string(c.array.cols) + " array";
}

struct Operands {
    Matrix<std::int8_t> A, B;
};
Operands operands(const Case& c, std::uint64_t seed) {
    return {random_int8_matrix(c.M, c.K, seed), random_int8_matrix(c.K, c.N, seed + 1)};
}

// The student's whole weight-stationary GEMM on case @p c: C and the counts.
std::pair<std::vector<std::int32_t>, Counts> run_case(const Case& c, std::uint64_t seed) {
    const Operands o = operands(c, seed);
    return graded::student<std::pair<std::vector<std::int32_t>, Counts>>("ws_gemm", [&] {
        auto run = systolic_gemm(o.A, o.B, c.array, Dataflow::WeightStationary);
        return std::make_pair(run.C.data, run.counts);
    });
}

// One cell step's registers as numbers: weight, weight valid, a, a valid, psum, psum valid.
template <class T>
std::vector<double> step_registers(const WsCell<T>& cell, Wire<T> a, Wire<Accumulator<T>> psum) {
    const std::string key = std::is_integral_v<T> ? "cell_int8" : "cell_float";
    return graded::student<std::vector<double>>(key, [&] {
        const WsCell<T> n = ws_cell_step(cell, a, psum);
        return std::vector<double>{static_cast<double>(n.weight.value), double(n.weight.valid), static_cast<double>(n.a.value),
                                   double(n.a.valid), static_cast<double>(n.psum.value), double(n.psum.valid)};
    });
}

template <class T>
void check_cell_steps(const std::vector<T>& values, const std::vector<Accumulator<T>>& sums) {
    using Acc = Accumulator<T>;
    for (const T w : values)
        for (const T a : values)
            for (const Acc s : sums)
                for (int valid = 0; valid < 8; ++valid) {
                    const bool w_ok = valid & 1, a_ok = valid & 2, s_ok = valid & 4;
                    WsCell<T> cell;
                    cell.weight = {w, w_ok};
                    cell.a = {T(3), true};  // last cycle's registers must not leak into the outputs
                    cell.psum = {Acc(11), true};
                    const auto got = step_registers<T>(cell, {a, a_ok}, {s, s_ok});
                    const bool mac = a_ok && w_ok;
                    const Acc sum = mac ? static_cast<Acc>(s + static_cast<Acc>(a) * static_cast<Acc>(w)) : s;
                    const std::vector<double> want{double(w), double(w_ok), double(a), double(a_ok),
                                                   static_cast<double>(sum), double(mac || s_ok)};
                    ASSERT_EQ(got, want) << "weight " << double(w) << (w_ok ? "" : " (padding)") << ", a_in "
                                         << double(a) << (a_ok ? "" : " (bubble)") << ", psum_in " << double(s)
                                         << (s_ok ? "" : " (empty)")
                                         << ": got {weight, valid, a, valid, psum, valid} = {" << got[0] << ", "
                                         << got[1] << ", " << got[2] << ", " << got[3] << ", " << got[4] << ", "
                                         << got[5] << "}; the weight stays, a_in is latched, and psum_in gains "
                                            "a_in * weight only when both are real";
                }
}

// ---- Task 1: one cell's step ----------------------------------------------------------------

TEST(Lab14, CellStepInt8) {
    check_cell_steps<std::int8_t>({-128, -1, 0, 7, 127}, {0, -5, 2'000'000'000 - 16384, -2'000'000'000 + 16384});
}

TEST(Lab14, CellStepFloat) { check_cell_steps<float>({-1.5f, 0.0f, 2.25f}, {0.0f, 1e6f, -3.5f}); }

// ---- Task 2: the skewed feed ----------------------------------------------------------------

TEST(Lab14, FeedIsSkewed) {
    const Matrix<std::int8_t> A = random_int8_matrix(7, 12, 3);
    const std::int64_t R = 6;
    for (const WsPass pass : {WsPass{0, 6, 0, 4}, WsPass{3, 5, 0, 4}, WsPass{10, 2, 4, 1}}) {
        // Every row's input for every cycle of the pass and a little after, then the reads.
        const auto [fed, reads] = graded::student<std::pair<std::vector<std::int32_t>, std::int64_t>>("feed", [&] {
            Counts counts;
            std::vector<std::int32_t> out;
            for (std::int64_t r = 0; r < R; ++r)
                for (std::int64_t t = 0; t < A.rows + R + 3; ++t) {
                    const Wire<std::int8_t> w = ws_feed(A, pass, r, t, counts);
                    out.push_back(w.valid ? w.value : 1000);  // 1000: a bubble
                }
            return std::make_pair(out, counts.a_reads);
        });
        std::int64_t real = 0;
        std::size_t i = 0;
        ASSERT_EQ(fed.size(), static_cast<std::size_t>(R * (A.rows + R + 3)));
        for (std::int64_t r = 0; r < R; ++r)
            for (std::int64_t t = 0; t < A.rows + R + 3; ++t, ++i) {
                const std::int64_t m = t - r;
                const bool in_tile = m >= 0 && m < A.rows && r < pass.k_used;
                real += in_tile;
                ASSERT_EQ(fed[i], in_tile ? A.at(m, pass.k0 + r) : 1000)
                    << "pass k0=" << pass.k0 << " k_used=" << pass.k_used << ", array row " << r << ", cycle " << t
                    << ": row r gets A(t - r, k0 + r) while t - r is a row of A and r < k_used, else a bubble";
            }
        EXPECT_EQ(reads, real) << "pass k0=" << pass.k0 << ": count one read for each element fed, none for bubbles";
    }
}

// ---- The array built from them --------------------------------------------------------------

TEST(Lab14, ExactResultsOnOddSizes) {
    std::uint64_t seed = 1400;
    for (const Case& c : kOddCases) {
        seed += 2;
        const auto [C, counts] = run_case(c, seed);
        const Operands o = operands(c, seed);
        EXPECT_EQ(C, testkit::reference_int8_gemm(o.A, o.B).data)
            << describe(c) << ": C differs from the reference int8 GEMM";
    }
}

TEST(Lab14, FloatResults) {
    const auto A = testkit::random_float_matrix(21, 19, 5), B = testkit::random_float_matrix(19, 23, 6);
    const auto C = graded::student<std::vector<float>>("float_gemm", [&] {
        return systolic_gemm(A, B, {8, 8}, Dataflow::WeightStationary).C.data;
    });
    const auto expected = testkit::reference_float_gemm(A, B).data;
    ASSERT_EQ(C.size(), expected.size());
    for (std::size_t i = 0; i < C.size(); ++i) ASSERT_NEAR(C[i], expected[i], 1e-4) << "float C element " << i;
}

TEST(Lab14, CycleCountIsExact) {
    std::uint64_t seed = 1400;
    for (const Case& c : kOddCases) {
        seed += 2;
        const Counts counts = run_case(c, seed).second;
        EXPECT_EQ(counts.cycles, closed_form(c.M, c.N, c.K, c.array, Dataflow::WeightStationary).cycles)
            << describe(c) << ": each pass is R cycles of weight loading and M + R + C - 2 of streaming";
    }
}

TEST(Lab14, ReadCountsAreOncePerTilePass) {
    std::uint64_t seed = 1400;
    for (const Case& c : kOddCases) {
        seed += 2;
        const Counts counts = run_case(c, seed).second;
        const Counts f = closed_form(c.M, c.N, c.K, c.array, Dataflow::WeightStationary);
        EXPECT_EQ(counts.a_reads, f.a_reads) << describe(c) << ": each element of A is read once per pass of its "
                                                               "K-slice, once for every block of C's columns";
        EXPECT_EQ(counts.b_reads, f.b_reads) << describe(c) << ": each weight is read once";
        EXPECT_LT(counts.a_reads + counts.b_reads, 2 * c.M * c.N * c.K + 1) << "no more reads than the scalar loop";
    }
}

}  // namespace
}  // namespace gl
