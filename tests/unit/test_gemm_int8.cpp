// INT8 GEMM kernels (u8 x s8 -> s32, and fused requantization to u8) against the naive
// oracle, exactly: integer sums have one right answer. Shapes that are not multiples of
// any tile or block, both layouts of B, zero points on either side, padded rows, one and
// two threads. Paths this CPU cannot run (AMX on most machines) skip with a message.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "base/aligned_vector.hpp"
#include "base/error.hpp"
#include "kernels/cpu/int8/pack.hpp"
#include "kernels/gemm_int8.hpp"
#include "numerics/quantize.hpp"
#include "parallel/thread_pool.hpp"
#include "sys/cpu_info.hpp"

namespace gl::kernels {
namespace {

struct Problem {
    std::int64_t M, N, K;
    bool trans_b;
    std::int32_t za, zb;
    std::int64_t pad;  // extra elements at the end of every row
};

template <class T>
std::vector<T> random_bytes(std::size_t n, int lo, int hi, unsigned seed) {
    std::mt19937 gen(seed);
    std::uniform_int_distribution<int> d(lo, hi);
    std::vector<T> v(n);
    for (auto& x : v) x = static_cast<T>(d(gen));
    return v;
}

struct Operands {
    std::vector<std::uint8_t> A;
    std::vector<std::int8_t> B;
    Int8GemmArgs args;
};

Operands operands(const Problem& p) {
    Operands o;
    const std::int64_t lda = p.K + p.pad, ldb = (p.trans_b ? p.K : p.N) + p.pad;
    o.A = random_bytes<std::uint8_t>(static_cast<std::size_t>(std::max<std::int64_t>(p.M * lda, 1)), 0, 255, 1);
    o.B = random_bytes<std::int8_t>(static_cast<std::size_t>(std::max<std::int64_t>((p.trans_b ? p.N : p.K) * ldb, 1)),
                                    -128, 127, 2);
    auto& g = o.args;
    g.M = p.M;
    g.N = p.N;
    g.K = p.K;
    g.A = o.A.data();
    g.lda = lda;
    g.a_zero_point = p.za;
    g.B = o.B.data();
    g.ldb = ldb;
    g.trans_b = p.trans_b;
    g.b_zero_point = p.zb;
    g.ldc = p.N + p.pad;
    return o;
}

// The last two have K past the longest K pass of any path (KC = 2048 in int8_vnni_rows),
// so every path adds tiles over several passes.
std::vector<Problem> problems() {
    return {{1, 1, 1, true, 0, 0, 0},        {13, 37, 50, true, 7, 0, 0},      {13, 37, 50, false, 255, -3, 3},
            {100, 70, 129, true, 128, 0, 1}, {200, 600, 300, true, 3, 0, 0},   {97, 513, 67, false, 0, 5, 0},
            {64, 10, 128, true, 0, 0, 0},    {5, 3, 0, true, 9, 2, 0},         {0, 4, 4, true, 0, 0, 0},
            {37, 70, 1100, true, 5, -2, 1},  {30, 40, 1030, false, 200, 0, 0}, {9, 50, 2101, true, 3, 1, 0},
            {17, 97, 4099, false, 0, 0, 2}};
}

std::int64_t round_up_to(std::int64_t x, std::int64_t m) { return (x + m - 1) / m * m; }

class Int8Gemm : public ::testing::TestWithParam<std::string> {
protected:
    const Int8GemmKernel& kernel() {
        const Int8GemmKernel& k = find_int8_gemm(GetParam());
        if (!k.available()) skip_ = "this CPU lacks " + k.needs + " (see `gradlab info`); " + k.name + " not run";
        return k;
    }
    std::string skip_;
};

TEST_P(Int8Gemm, Int32OutputMatchesTheOracle) {
    const Int8GemmKernel& k = kernel();
    if (!skip_.empty()) GTEST_SKIP() << skip_;
    for (int threads : {1, 2}) {
        set_num_threads(threads);
        for (const Problem& p : problems()) {
            Operands o = operands(p);
            std::vector<std::int32_t> got(static_cast<std::size_t>(std::max<std::int64_t>(p.M * o.args.ldc, 1)), -7);
            std::vector<std::int32_t> want = got;
            o.args.C = got.data();
            run_int8_gemm(k, o.args);
            o.args.C = want.data();
            find_int8_gemm("int8_naive").fn(o.args);
            ASSERT_EQ(got, want) << k.name << " " << p.M << "x" << p.N << "x" << p.K << " trans_b " << p.trans_b
                                 << " za " << p.za << " zb " << p.zb << " threads " << threads;
        }
    }
    set_num_threads(1);
}

TEST_P(Int8Gemm, ALargeAlignedCMatchesTheOracle) {
    // C of more than 8 MiB whose rows start on cache lines: int8_vnni_rows writes it with
    // streaming stores (pack.hpp's stream_c). The same C one element off the line takes
    // the ordinary stores. Both must match the oracle, on 2 threads.
    const Int8GemmKernel& k = kernel();
    if (!skip_.empty()) GTEST_SKIP() << skip_;
    set_num_threads(2);
    const Problem p{1500, 1408, 36, true, 3, 0, 0};  // 1500 x 1408 INT32 = 8.06 MiB
    Operands o = operands(p);
    AlignedVector<std::int32_t> got(static_cast<std::size_t>(p.M * p.N + 1), -7), want = got;
    for (const std::int64_t offset : {0, 1}) {
        o.args.C = got.data() + offset;
        run_int8_gemm(k, o.args);
        o.args.C = want.data() + offset;
        find_int8_gemm("int8_naive").fn(o.args);
        ASSERT_EQ(got, want) << k.name << ", C " << offset << " element(s) past a cache line";
    }
    set_num_threads(1);
}

TEST_P(Int8Gemm, FusedRequantizationMatchesTheOracle) {
    const Int8GemmKernel& k = kernel();
    if (!skip_.empty()) GTEST_SKIP() << skip_;
    if (k.peer) GTEST_SKIP() << k.name << " writes INT32 only";
    for (int threads : {1, 2})
    for (bool per_column : {false, true}) {
        set_num_threads(threads);
        for (const Problem& p : problems()) {
            Operands o = operands(p);
            std::vector<std::int32_t> bias = random_bytes<std::int32_t>(static_cast<std::size_t>(p.N) + 1, -5000, 5000, 3);
            std::vector<quant::FixedPointMultiplier> m;
            for (std::int64_t j = 0; j < (per_column ? p.N : 1); ++j)
                m.push_back(quant::to_fixed_point(0.0005 * (1.0 + 0.37 * static_cast<double>(j % 11))));
            const std::size_t n = static_cast<std::size_t>(std::max<std::int64_t>(p.M * p.N, 1));
            std::vector<std::uint8_t> got(n, 7), want(n, 7);
            Int8Requant rq{bias.data(), m.data(), per_column, 20, {20, 255}, got.data(), p.N};  // ReLU fused: qmin = zp
            o.args.requant = &rq;
            run_int8_gemm(k, o.args);
            rq.out = want.data();
            find_int8_gemm("int8_naive").fn(o.args);
            ASSERT_EQ(got, want) << k.name << " " << p.M << "x" << p.N << "x" << p.K << " per column " << per_column
                                 << " threads " << threads;
        }
    }
    set_num_threads(1);
}

// The same, with sums small enough for a multiplier of 1: every unit of the accumulator
// then shows in the output, so a compensation or bias that is off by one fails (with the
// test above's multipliers of about 0.0005 it would not). A in [0, 2] and B in [-1, 1];
// the problems whose K keeps the sums inside the output's range.
TEST_P(Int8Gemm, FusedRequantizationIsExactToOneUnit) {
    const Int8GemmKernel& k = kernel();
    if (!skip_.empty()) GTEST_SKIP() << skip_;
    if (k.peer) GTEST_SKIP() << k.name << " writes INT32 only";
    const std::vector<quant::FixedPointMultiplier> one(600, quant::to_fixed_point(1.0));
    for (int threads : {1, 2}) {
        set_num_threads(threads);
        for (const Problem& p : problems()) {
            if (p.K > 130 || p.zb != 0) continue;
            Operands o = operands(p);
            for (auto& a : o.A) a = static_cast<std::uint8_t>(a % 3);
            for (auto& b : o.B) b = static_cast<std::int8_t>(b % 2);
            o.args.a_zero_point = 1;
            const std::vector<std::int32_t> bias = random_bytes<std::int32_t>(static_cast<std::size_t>(p.N) + 1, -20, 20, 4);
            const std::size_t n = static_cast<std::size_t>(std::max<std::int64_t>(p.M * p.N, 1));
            std::vector<std::uint8_t> got(n, 7), want(n, 7);
            for (bool per_column : {false, true}) {
                Int8Requant rq{bias.data(), one.data(), per_column, 128, {0, 255}, got.data(), p.N};
                o.args.requant = &rq;
                run_int8_gemm(k, o.args);
                rq.out = want.data();
                find_int8_gemm("int8_naive").fn(o.args);
                ASSERT_EQ(got, want) << k.name << " " << p.M << "x" << p.N << "x" << p.K << " per column "
                                     << per_column << " threads " << threads;
            }
        }
    }
    set_num_threads(1);
}

// Weights packed once (pack_int8_weights, as a quantized layer does when it is built) give
// the same sums as B packed inside the call, on one and two threads (the threads take
// blocks from a shared counter, so two threads and one must agree exactly too); weights
// packed for another shape are refused.
TEST_P(Int8Gemm, PrepackedWeightsMatchPackingPerCall) {
    const Int8GemmKernel& k = kernel();
    if (!skip_.empty()) GTEST_SKIP() << skip_;
    if (k.pack_width == 0) GTEST_SKIP() << k.name << " does not pack B";
    for (int threads : {1, 2}) {
        set_num_threads(threads);
        for (const Problem& p : problems()) {
            Operands o = operands(p);
            const Int8PackedB packed = pack_int8_weights(k, o.args);
            EXPECT_EQ(packed.width, k.pack_width);
            std::vector<std::int32_t> got(static_cast<std::size_t>(std::max<std::int64_t>(p.M * o.args.ldc, 1)), -7);
            std::vector<std::int32_t> want = got;
            o.args.C = want.data();
            run_int8_gemm(k, o.args);
            o.args.C = got.data();
            o.args.packed_b = &packed;
            run_int8_gemm(k, o.args);
            ASSERT_EQ(got, want) << k.name << " " << p.M << "x" << p.N << "x" << p.K << " threads " << threads;
        }
    }
    set_num_threads(1);
    Operands small = operands({13, 37, 50, true, 7, 0, 0}), other = operands({13, 36, 50, true, 7, 0, 0});
    const Int8PackedB packed = pack_int8_weights(k, other.args);
    std::vector<std::int32_t> c(13 * 37);
    small.args.C = c.data();
    small.args.packed_b = &packed;
    EXPECT_THROW(run_int8_gemm(k, small.args), Error);
}

// A ending right where an unreadable page begins: a kernel that read A in place and let
// its last group of four run past K (int8_vnni_direct must pad the K tail instead) would
// fault here. K = 50 and 2101 leave tails of 2 and 1 (2101 also in a second K pass), the
// row counts leave partial tiles.
TEST_P(Int8Gemm, ReadsNoByteOfAPastItsEnd) {
    const Int8GemmKernel& k = kernel();
    if (!skip_.empty()) GTEST_SKIP() << skip_;
    if (k.peer) GTEST_SKIP() << k.name << ": a library, not ours to check";
    const std::int64_t page = sysconf(_SC_PAGESIZE);
    for (const Problem& p : std::vector<Problem>{{13, 37, 50, true, 7, 0, 0}, {9, 70, 2101, false, 3, 1, 0}}) {
        Operands o = operands(p);
        const std::int64_t bytes = p.M * p.K, mapped = round_up_to(bytes, page) + page;
        void* map = mmap(nullptr, static_cast<std::size_t>(mapped), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                         -1, 0);
        ASSERT_NE(map, MAP_FAILED);
        auto* guard = static_cast<std::uint8_t*>(map) + (mapped - page);
        ASSERT_EQ(mprotect(guard, static_cast<std::size_t>(page), PROT_NONE), 0);
        std::memcpy(guard - bytes, o.A.data(), static_cast<std::size_t>(bytes));
        std::vector<std::int32_t> got(static_cast<std::size_t>(p.M * o.args.ldc), -7), want = got;
        o.args.C = want.data();
        find_int8_gemm("int8_naive").fn(o.args);
        o.args.A = guard - bytes;
        o.args.C = got.data();
        run_int8_gemm(k, o.args);
        munmap(map, static_cast<std::size_t>(mapped));
        ASSERT_EQ(got, want) << k.name << " " << p.M << "x" << p.N << "x" << p.K;
    }
}

INSTANTIATE_TEST_SUITE_P(Kernels, Int8Gemm, ::testing::ValuesIn([] {
                             std::vector<std::string> names;
                             for (const auto& k : int8_gemm_kernels())
                                 if (k.name != "int8_naive") names.push_back(k.name);
                             return names;
                         }()),
                         [](const auto& info) { return info.param; });

// The oracle itself against sums in 64-bit integers written out here.
TEST(Int8Requantize, SpanMatchesTheScalarRequantization) {
    // requantize_span (the AVX-512 loop where this CPU has it) against quant::requantize,
    // element by element: every tail length 1..19, per column and per tensor, multipliers
    // below and above 1 (right shift 0), ties (acc odd, multiplier 0.5), both clamps.
    std::mt19937 gen(5);
    std::uniform_int_distribution<std::int32_t> wide(-(1 << 24), 1 << 24);
    std::vector<quant::FixedPointMultiplier> m;
    for (double real : {0.5, 1e-4, 0.37, 3e-7, 1.0, 2.5, 0.0123, 0.5, 0.999, 1e-2, 0.25, 0.75, 7e-3, 0.5, 0.1, 0.2,
                        0.3, 0.4, 0.6})
        m.push_back(quant::to_fixed_point(real));
    for (std::int64_t count = 1; count <= 19; ++count)
        for (bool per_column : {true, false})
            for (int trial = 0; trial < 20; ++trial) {
                std::vector<std::int32_t> acc(static_cast<std::size_t>(count));
                for (auto& a : acc) a = trial < 5 ? 2 * (trial + 1) * (wide(gen) % 3) + 1 : wide(gen);  // odd: ties at 0.5
                const quant::QRange range{trial % 2 ? 20 : 0, 255};
                std::vector<std::uint8_t> got(static_cast<std::size_t>(count) + 8, 77);  // past the end: untouched
                int8::requantize_span(acc.data(), m.data(), per_column, 20, range, count, got.data());
                for (std::int64_t c = 0; c < count; ++c)
                    ASSERT_EQ(int(got[c]), quant::requantize(acc[c], m[per_column ? c : 0], 20, range))
                        << "count " << count << " column " << c << " acc " << acc[c];
                for (std::size_t c = static_cast<std::size_t>(count); c < got.size(); ++c) ASSERT_EQ(got[c], 77);
            }
}

TEST(Int8Compensate, SpanMatchesTheFormulaAndStopsAtTheCount) {
    // compensate_span against raw - za * sum + row_term in 64-bit arithmetic wrapped to 32
    // bits: every tail length 1..37 (two whole vectors and a masked one), zero points at the
    // extremes; contiguous raw sums (the AVX-512 loop where this CPU has it), in place and
    // not, and every third one (a column-major tile's row: the scalar loop).
    std::mt19937 gen(9);
    std::uniform_int_distribution<std::int32_t> any(std::numeric_limits<std::int32_t>::min(),
                                                    std::numeric_limits<std::int32_t>::max());
    for (std::int64_t count = 1; count <= 37; ++count)
        for (std::int32_t za : {0, 1, 128, 255})
            for (int layout = 0; layout < 3; ++layout) {  // separate, in place, strided
                const bool in_place = layout == 1;
                const std::int64_t step = layout == 2 ? 3 : 1;
                std::vector<std::int32_t> raw(static_cast<std::size_t>(count * step)), sums(static_cast<std::size_t>(count));
                for (auto& r : raw) r = any(gen);
                for (auto& s : sums) s = any(gen) % (1 << 20);
                const std::int32_t row_term = any(gen);
                std::vector<std::int32_t> out(sums.size() + 5, 77);  // past the end: untouched
                if (in_place) std::copy(raw.begin(), raw.end(), out.begin());
                int8::compensate_span(in_place ? out.data() : raw.data(), step, sums.data(), za, row_term, count,
                                      out.data());
                for (std::size_t c = 0; c < sums.size(); ++c) {
                    const std::int64_t want =
                        std::int64_t{raw[c * static_cast<std::size_t>(step)]} - std::int64_t{za} * sums[c] + row_term;
                    ASSERT_EQ(out[c], static_cast<std::int32_t>(static_cast<std::uint32_t>(want)))
                        << "count " << count << " column " << c << " za " << za << " layout " << layout;
                }
                for (std::size_t c = sums.size(); c < out.size(); ++c) ASSERT_EQ(out[c], 77);
            }
}

TEST(Int8GemmOracle, MatchesWideSums) {
    Operands o = operands({7, 5, 33, false, 100, -7, 0});
    std::vector<std::int32_t> c(35);
    o.args.C = c.data();
    find_int8_gemm("int8_naive").fn(o.args);
    for (std::int64_t i = 0; i < 7; ++i)
        for (std::int64_t j = 0; j < 5; ++j) {
            std::int64_t s = 0;
            for (std::int64_t k = 0; k < 33; ++k) s += (o.A[i * 33 + k] - 100LL) * (o.B[k * 5 + j] + 7LL);
            EXPECT_EQ(c[i * 5 + j], s);
        }
}

// The packing of several rows at once (8 x 8 transposes of 4-byte groups where the CPU
// has AVX2; 16 x 16 transposes, and six rows interleaved into a contiguous 6-row sliver,
// where it has AVX-512) lays the bytes out exactly as copying them group by group does,
// for every row count up to 16, K not a multiple of the 32 or 64 values a transpose
// takes, and padded strides as well as the contiguous sliver of an A (stride 4 x rows).
TEST(Int8Packing, SeveralRowsAtOnceMatchGroupByGroup) {
    const std::int64_t K = 141, src_stride = 150;
    const auto src = random_bytes<std::uint8_t>(static_cast<std::size_t>(16 * src_stride), 0, 255, 3);
    for (std::int64_t rows = 1; rows <= 16; ++rows)
        for (const std::int64_t dst_stride : {std::int64_t{4 * 68}, 4 * rows}) {
            std::vector<std::uint8_t> fast(static_cast<std::size_t>(dst_stride * 40), 0), slow(fast);
            int8::scatter_rows_in_fours(src.data(), src_stride, rows, K, dst_stride, fast.data());
            for (std::int64_t r = 0; r < rows; ++r)
                int8::scatter_groups(src.data() + r * src_stride, 1, K, 4, dst_stride, slow.data() + 4 * r);
            EXPECT_EQ(fast, slow) << rows << " rows, destination stride " << dst_stride;
        }
}

TEST(Int8GemmDispatch, PicksTheMostCapablePathThisCpuHas) {
    const auto& f = sys::cpu_info().features;
    const std::string best = best_int8_gemm().name;
    if (f.amx_tile && f.amx_int8) EXPECT_EQ(best, "int8_amx");
    else if (f.avx512_vnni && f.avx512bw) EXPECT_EQ(best, "int8_vnni_direct");
    else EXPECT_EQ(best, "int8_portable");
    EXPECT_FALSE(best_int8_gemm().peer);
    EXPECT_THROW(find_int8_gemm("int8_magic"), Error);
}

}  // namespace
}  // namespace gl::kernels
