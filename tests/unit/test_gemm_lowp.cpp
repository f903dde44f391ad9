// Low-precision GEMM kernels against the naive oracle (FP32 accumulation of the same
// 16-bit inputs), over shapes that are not multiples of any tile, every transpose
// combination, and both 16-bit types. Kernels this CPU cannot run skip with a message.
// Also the element-wise kernels on 16-bit storage against scalar loops.
#include <gtest/gtest.h>

#include <cmath>
#include <tuple>
#include <vector>

#include "base/rng.hpp"
#include "kernels/cpu/elementwise.hpp"
#include "kernels/cpu/elementwise_lowp.hpp"
#include "kernels/gemm_lowp.hpp"
#include "numerics/convert.hpp"
#include "ops/ops.hpp"
#include "testkit/random.hpp"

namespace gl::kernels {
namespace {

using testkit::random_16bit;

struct Problem {
    std::int64_t M, N, K;
    bool ta, tb;
};

// C from `kernel` and from the oracle, for one problem.
std::pair<std::vector<float>, std::vector<float>> run_both(const LowpGemmKernel& kernel, DType dtype, const Problem& p) {
    const auto A = random_16bit(dtype, static_cast<std::size_t>(p.M * p.K), 1);
    const auto B = random_16bit(dtype, static_cast<std::size_t>(p.K * p.N), 2);
    LowpGemmArgs g;
    g.dtype = dtype;
    g.trans_a = p.ta;
    g.trans_b = p.tb;
    g.M = p.M;
    g.N = p.N;
    g.K = p.K;
    g.A = A.data();
    g.lda = p.ta ? p.M : p.K;
    g.B = B.data();
    g.ldb = p.tb ? p.K : p.N;
    g.ldc = p.N;
    std::vector<float> got(static_cast<std::size_t>(p.M * p.N), -7.0f), want(got.size(), -7.0f);
    g.C = got.data();
    run_lowp_gemm(kernel, g);
    g.C = want.data();
    find_lowp_gemm("lowp_naive").fn(g);
    return {got, want};
}

class LowpGemmTest : public ::testing::TestWithParam<std::tuple<const char*, DType>> {};

TEST_P(LowpGemmTest, MatchesTheNaiveOracle) {
    const auto& [name, dtype] = GetParam();
    const LowpGemmKernel& kernel = find_lowp_gemm(name);
    if (!kernel.supports(dtype)) GTEST_SKIP() << name << " does not take " << name_of(dtype);
    if (!kernel.available()) GTEST_SKIP() << name << " needs " << kernel.needs << ", which this CPU lacks";
    const Problem problems[] = {{1, 1, 1, false, false},   {13, 33, 7, false, false}, {12, 32, 256, false, false},
                                {50, 70, 300, true, false}, {37, 65, 129, false, true}, {31, 17, 513, true, true},
                                {200, 100, 64, false, true}};
    for (const Problem& p : problems) {
        const auto [got, want] = run_both(kernel, dtype, p);
        for (std::size_t i = 0; i < got.size(); ++i)
            // Same products (exact in FP32), FP32 sums in another order.
            ASSERT_NEAR(got[i], want[i], 1e-5 * p.K + 1e-6)
                << name << " " << p.M << "x" << p.N << "x" << p.K << " ta " << p.ta << " tb " << p.tb << " at " << i;
    }
}

INSTANTIATE_TEST_SUITE_P(Kernels, LowpGemmTest,
                         ::testing::Values(std::make_tuple("lowp_convert", DType::Float16),
                                           std::make_tuple("lowp_convert", DType::BFloat16),
                                           std::make_tuple("bf16_avx512", DType::BFloat16),
                                           std::make_tuple("fp16_avx512fp16", DType::Float16),
                                           std::make_tuple("bf16_amx", DType::BFloat16)),
                         [](const auto& info) {
                             return std::string(std::get<0>(info.param)) + "_" + name_of(std::get<1>(info.param));
                         });

TEST(LowpGemm, BestKernelRunsHereAndSaysWhy) {
    EXPECT_TRUE(best_lowp_gemm(DType::BFloat16).available());
    EXPECT_TRUE(best_lowp_gemm(DType::Float16).available());
    EXPECT_THROW(find_lowp_gemm("nope"), Error);
}

TEST(LowpGemm, MatmulOnHalfTensorsRoundsTheFp32Result) {
    Rng rng(3);
    const Tensor a = rand_uniform({9, 40}, -1, 1, rng);
    const Tensor b = rand_uniform({40, 11}, -1, 1, rng);
    for (DType dtype : {DType::Float16, DType::BFloat16}) {
        const Tensor a16 = to_dtype(a, dtype), b16 = to_dtype(b, dtype);
        const Tensor c16 = matmul(a16, t(to_dtype(t(b).contiguous(), dtype)));
        ASSERT_EQ(c16.dtype(), dtype);
        const Tensor ref = matmul(to_dtype(a16, DType::Float32), to_dtype(b16, DType::Float32));
        const Tensor want = to_dtype(ref, dtype);
        EXPECT_EQ(to_dtype(c16, DType::Float32).to_vector<float>(), to_dtype(want, DType::Float32).to_vector<float>());
    }
}

TEST(ElementwiseLowp, AxpyAndReluMatchScalarLoops) {
    const std::size_t n = 200037;  // several threads' shares, and a masked tail
    const std::vector<float> x = testkit::random_floats(n, 5, -4.0, 4.0), y = testkit::random_floats(n, 6, -4.0, 4.0);
    for (DType dtype : {DType::Float16, DType::BFloat16}) {
        std::vector<std::uint16_t> x16(n), y16(n), want(n);
        numerics::from_float(dtype, x.data(), x16.data(), n);
        numerics::from_float(dtype, y.data(), y16.data(), n);
        for (std::size_t i = 0; i < n; ++i) {
            float xf, yf;
            numerics::to_float(dtype, &x16[i], &xf, 1);
            numerics::to_float(dtype, &y16[i], &yf, 1);
            const float r = std::fma(0.37f, xf, yf);
            numerics::from_float(dtype, &r, &want[i], 1);
        }
        (dtype == DType::Float16 ? axpy_f16 : axpy_bf16)(n, 0.37f, x16.data(), y16.data());
        ASSERT_EQ(y16, want) << name_of(dtype);
    }
    std::vector<std::uint16_t> x16(n), r16(n);
    numerics::float_to_half(x.data(), x16.data(), n);
    relu_f16(n, x16.data(), r16.data());
    for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(half_bits_to_float(r16[i]), std::max(half_bits_to_float(x16[i]), 0.0f));
}

}  // namespace
}  // namespace gl::kernels
