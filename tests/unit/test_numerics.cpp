// FP-1: half and bfloat16 conversions, checked on every 16-bit pattern against the CPU's
// own conversion instructions (F16C, AVX512-BF16) where present and against Eigen's
// half/bfloat16; random floats for the float -> 16-bit direction. The format table.
#include <gtest/gtest.h>

#include <Eigen/Core>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "numerics/convert.hpp"
#include "numerics/formats.hpp"
#include "ops/ops.hpp"
#include "sys/cpu_info.hpp"

namespace gl {
namespace {

std::uint32_t bits_of(float f) { return std::bit_cast<std::uint32_t>(f); }

std::vector<std::uint16_t> all_patterns() {
    std::vector<std::uint16_t> v(65536);
    for (std::uint32_t i = 0; i < 65536; ++i) v[i] = static_cast<std::uint16_t>(i);
    return v;
}

// Random floats that cover every binade of interest, plus the edge cases.
std::vector<float> test_floats(std::size_t n) {
    std::mt19937 gen(42);
    std::uniform_int_distribution<std::uint32_t> any_bits;
    std::uniform_real_distribution<float> exponent(-30.0f, 17.0f);
    std::vector<float> v;
    for (std::size_t i = 0; i < n / 2; ++i) v.push_back(std::bit_cast<float>(any_bits(gen)));
    for (std::size_t i = 0; i < n / 2; ++i)
        v.push_back((i % 2 ? -1.0f : 1.0f) * std::exp2(exponent(gen)));
    const float edges[] = {0.0f, -0.0f, 65504.0f, 65519.99f, 65520.0f, 65536.0f, 6.1035156e-05f, 5.9604645e-08f,
                           2.9802322e-08f, 2.9802326e-08f, 1.0f + 1.0f / 2048, 1.0f + 3.0f / 2048,
                           std::numeric_limits<float>::infinity(), std::numeric_limits<float>::max(),
                           std::numeric_limits<float>::denorm_min(), std::numeric_limits<float>::min(),
                           std::bit_cast<float>(0x7F800001u), std::bit_cast<float>(0xFFC00001u)};
    for (float e : edges) v.push_back(e);
    // Every tie: the midpoint between consecutive halves (and bfloat16s) is exact in float.
    for (std::uint32_t h = 0; h < 0x7C00; ++h) {
        const float lo = half_bits_to_float(static_cast<std::uint16_t>(h));
        const float hi = half_bits_to_float(static_cast<std::uint16_t>(h + 1));
        v.push_back(lo + (hi - lo) / 2);
    }
    return v;
}

// ---- half -------------------------------------------------------------------------------

TEST(Half, KnownValues) {
    EXPECT_EQ(float_to_half_bits(1.0f), 0x3C00);
    EXPECT_EQ(float_to_half_bits(-2.0f), 0xC000);
    EXPECT_EQ(float_to_half_bits(65504.0f), 0x7BFF);
    EXPECT_EQ(float_to_half_bits(65520.0f), 0x7C00) << "the tie above the largest half rounds to even: infinity";
    EXPECT_EQ(float_to_half_bits(65519.0f), 0x7BFF);
    EXPECT_EQ(float_to_half_bits(std::exp2(-24.0f)), 0x0001) << "smallest subnormal";
    EXPECT_EQ(float_to_half_bits(std::exp2(-25.0f)), 0x0000) << "half of it ties to even: zero";
    EXPECT_EQ(float_to_half_bits(1.5f * std::exp2(-25.0f)), 0x0001);
    EXPECT_EQ(float_to_half_bits(1.0f + 1.0f / 2048), 0x3C00) << "tie between 1 and 1+2^-10 goes to even (1)";
    EXPECT_EQ(float_to_half_bits(1.0f + 3.0f / 2048), 0x3C02) << "tie goes to even (1 + 2^-9)";
    EXPECT_EQ(half_bits_to_float(0x0001), std::exp2(-24.0f));
    EXPECT_EQ(half_bits_to_float(0x03FF), 1023 * std::exp2(-24.0f));
    EXPECT_EQ(half_bits_to_float(0x0400), std::exp2(-14.0f));
    EXPECT_TRUE(std::isinf(half_bits_to_float(0xFC00)) && half_bits_to_float(0xFC00) < 0);
    EXPECT_EQ(bits_of(half_bits_to_float(0x7C01)), 0x7FC02000u) << "a signalling NaN comes back quiet, payload kept";
}

TEST(Half, EveryPatternRoundTripsExactly) {
    for (std::uint16_t h : all_patterns()) {
        const float f = half_bits_to_float(h);
        const std::uint16_t back = float_to_half_bits(f);
        if (std::isnan(f))
            EXPECT_EQ(back, h | 0x0200) << "NaN 0x" << std::hex << h << " must stay NaN with its payload, made quiet";
        else
            ASSERT_EQ(back, h) << "pattern 0x" << std::hex << h;
    }
}

TEST(Half, EveryPatternMatchesEigen) {
    for (std::uint16_t h : all_patterns()) {
        const float ours = half_bits_to_float(h);
        const float eigen = static_cast<float>(Eigen::numext::bit_cast<Eigen::half>(h));
        if (std::isnan(ours)) {
            EXPECT_TRUE(std::isnan(eigen));
            continue;  // Eigen does not quiet NaN payloads; both are NaN
        }
        ASSERT_EQ(bits_of(ours), bits_of(eigen)) << "pattern 0x" << std::hex << h;
        ASSERT_EQ(float_to_half_bits(ours), Eigen::numext::bit_cast<std::uint16_t>(Eigen::half(ours)));
    }
}

TEST(Half, RandomFloatsMatchEigen) {
    for (float f : test_floats(200000)) {
        const std::uint16_t ours = float_to_half_bits(f);
        const auto eigen = Eigen::numext::bit_cast<std::uint16_t>(Eigen::half(f));
        if (std::isnan(f)) {
            EXPECT_TRUE((ours & 0x7C00) == 0x7C00 && (ours & 0x03FF) != 0);
            continue;  // Eigen returns one canonical NaN; ours keeps sign and payload
        }
        ASSERT_EQ(ours, eigen) << "float bits 0x" << std::hex << bits_of(f);
    }
}

TEST(Half, EveryPatternAndRandomFloatsMatchF16C) {
    if (!numerics::available(numerics::ConvertPath::F16C)) GTEST_SKIP() << "this CPU has no F16C";
    const auto patterns = all_patterns();
    std::vector<float> hw(patterns.size()), ours(patterns.size());
    numerics::half_to_float(patterns.data(), hw.data(), patterns.size(), numerics::ConvertPath::F16C);
    numerics::half_to_float(patterns.data(), ours.data(), patterns.size(), numerics::ConvertPath::Portable);
    for (std::size_t i = 0; i < patterns.size(); ++i)
        ASSERT_EQ(bits_of(ours[i]), bits_of(hw[i])) << "half 0x" << std::hex << patterns[i];
    const auto floats = test_floats(200000);
    std::vector<std::uint16_t> hw16(floats.size()), ours16(floats.size());
    numerics::float_to_half(floats.data(), hw16.data(), floats.size(), numerics::ConvertPath::F16C);
    numerics::float_to_half(floats.data(), ours16.data(), floats.size(), numerics::ConvertPath::Portable);
    for (std::size_t i = 0; i < floats.size(); ++i)
        ASSERT_EQ(ours16[i], hw16[i]) << "float bits 0x" << std::hex << bits_of(floats[i]);
}

// ---- bfloat16 ---------------------------------------------------------------------------

TEST(BFloat16, KnownValues) {
    EXPECT_EQ(float_to_bfloat16_bits(1.0f), 0x3F80);
    EXPECT_EQ(float_to_bfloat16_bits(std::bit_cast<float>(0x3F808000u)), 0x3F80) << "tie to even (down)";
    EXPECT_EQ(float_to_bfloat16_bits(std::bit_cast<float>(0x3F818000u)), 0x3F82) << "tie to even (up)";
    EXPECT_EQ(float_to_bfloat16_bits(std::numeric_limits<float>::max()), 0x7F80) << "FP32 max rounds to inf";
    EXPECT_EQ(float_to_bfloat16_bits(std::bit_cast<float>(0x00018000u)), 0x0002) << "subnormals are kept";
    EXPECT_EQ(float_to_bfloat16_bits(std::bit_cast<float>(0x7F800001u)), 0x7FC0) << "NaN stays NaN, made quiet";
}

TEST(BFloat16, EveryPatternRoundTripsAndMatchesEigen) {
    for (std::uint16_t b : all_patterns()) {
        const float f = bfloat16_bits_to_float(b);
        const float eigen = static_cast<float>(Eigen::numext::bit_cast<Eigen::bfloat16>(b));
        if (std::isnan(f)) {
            EXPECT_TRUE(std::isnan(eigen));
            EXPECT_EQ(float_to_bfloat16_bits(f), b | 0x0040);
            continue;
        }
        ASSERT_EQ(bits_of(f), bits_of(eigen)) << "pattern 0x" << std::hex << b;
        ASSERT_EQ(float_to_bfloat16_bits(f), b) << "pattern 0x" << std::hex << b;
    }
}

TEST(BFloat16, RandomFloatsMatchEigen) {
    for (float f : test_floats(200000)) {
        if (std::isnan(f)) continue;  // Eigen returns one canonical NaN
        ASSERT_EQ(float_to_bfloat16_bits(f), Eigen::numext::bit_cast<std::uint16_t>(Eigen::bfloat16(f)))
            << "float bits 0x" << std::hex << bits_of(f);
    }
}

TEST(BFloat16, MatchesAvx512Bf16ExceptThatItFlushesSubnormals) {
    if (!numerics::available(numerics::ConvertPath::Avx512Bf16)) GTEST_SKIP() << "this CPU has no AVX512-BF16";
    auto floats = test_floats(200000);
    for (std::uint16_t b : all_patterns()) floats.push_back(bfloat16_bits_to_float(b));
    std::vector<std::uint16_t> hw(floats.size());
    numerics::float_to_bfloat16(floats.data(), hw.data(), floats.size(), numerics::ConvertPath::Avx512Bf16);
    std::size_t subnormal = 0;
    for (std::size_t i = 0; i < floats.size(); ++i) {
        const float f = floats[i];
        if (std::fpclassify(f) == FP_SUBNORMAL) {  // vcvtneps2bf16 treats these as zero
            ++subnormal;
            ASSERT_EQ(hw[i], bits_of(f) >> 16 & 0x8000) << "AVX512-BF16 flushes subnormal inputs to signed zero";
            continue;
        }
        ASSERT_EQ(float_to_bfloat16_bits(f), hw[i]) << "float bits 0x" << std::hex << bits_of(f);
    }
    EXPECT_GT(subnormal, 0u);
}

// ---- the FP-1 table ---------------------------------------------------------------------

TEST(Formats, TableFromTheTypes) {
    const auto fp16 = numerics::format_info("FP16");
    EXPECT_EQ(fp16.epsilon, std::exp2(-10.0));
    EXPECT_EQ(fp16.max, 65504.0);
    EXPECT_EQ(fp16.min_normal, std::exp2(-14.0));
    EXPECT_EQ(fp16.min_subnormal, std::exp2(-24.0));
    const auto bf16 = numerics::format_info("BF16");
    EXPECT_EQ(bf16.epsilon, std::exp2(-7.0));
    EXPECT_EQ(bf16.min_normal, static_cast<double>(std::numeric_limits<float>::min())) << "BF16 keeps FP32's range";
    EXPECT_EQ(bf16.max, (2.0 - std::exp2(-7.0)) * std::exp2(127.0));
    EXPECT_EQ(bf16.min_subnormal, std::exp2(-133.0));
    EXPECT_EQ(numerics::format_info("FP32").epsilon, std::exp2(-23.0));
    EXPECT_EQ(numerics::format_info("FP64").mantissa_bits, 52);
    const auto i8 = numerics::format_info("INT8");
    EXPECT_EQ(i8.max, 127);
    EXPECT_EQ(i8.lowest, -128);
    EXPECT_THROW(numerics::format_info("FP8"), Error);
}

// ---- tensors and the cast op ------------------------------------------------------------

TEST(LowPrecisionTensors, ToDtypeRoundsOnceAndWidensExactly) {
    const Tensor x = from_vector<float>({1.0f, 1.0f + 1.0f / 2048, 70000.0f, 1e-8f, -3.140625f}, {5});
    const Tensor h = to_dtype(x, DType::Float16);
    EXPECT_EQ(h.dtype(), DType::Float16);
    EXPECT_EQ(h.storage()->nbytes(), 10u) << "two bytes per element";
    const auto back = to_dtype(h, DType::Float32).to_vector<float>();
    EXPECT_EQ(back[0], 1.0f);
    EXPECT_EQ(back[1], 1.0f);
    EXPECT_TRUE(std::isinf(back[2]));
    EXPECT_EQ(back[3], 0.0f);
    EXPECT_EQ(back[4], -3.140625f);
    EXPECT_EQ(to_dtype(x, DType::BFloat16).at({2}), 70144.0);
    // float64 -> half must round once: this value is just above a half tie, but rounding
    // it to float first would land exactly on the tie and round down to even.
    const double above_tie = 1.0 + std::exp2(-11.0) + std::exp2(-40.0);
    EXPECT_EQ(to_dtype(from_vector<double>({above_tie}, {1}), DType::Float16).item(), 1.0 + std::exp2(-10.0));
}

TEST(LowPrecisionTensors, CastIsDifferentiable) {
    Tensor x = from_vector<float>({1.0f, -2.0f, 1e-9f}, {3}).set_requires_grad();
    const Tensor y = cast(cast(x, DType::Float16), DType::Float32);
    sum(mul(y, 3.0)).backward();
    EXPECT_EQ(x.grad().to_vector<float>(), (std::vector<float>{3.0f, 3.0f, 3.0f}));
    EXPECT_EQ(cast(x, DType::Float32).impl_ptr(), x.impl_ptr()) << "a cast to the same type is the tensor itself";
}

TEST(LowPrecisionTensors, GradientCastObserverSeesUnderflow) {
    Tensor x = from_vector<float>({1.0f, 2.0f}, {2}).set_requires_grad();
    std::int64_t zeros = 0;
    set_gradient_cast_observer([&](const Tensor& wide, const Tensor& narrow) {
        const auto w = wide.to_vector<float>();
        const auto n = narrow.to_vector<float>();
        for (std::size_t i = 0; i < w.size(); ++i) zeros += w[i] != 0 && n[i] == 0;
    });
    const Tensor y = cast(cast(x, DType::Float16), DType::Float32);
    sum(mul(y, 1e-9)).backward();  // a gradient of 1e-9 is below FP16's smallest subnormal
    set_gradient_cast_observer(nullptr);
    EXPECT_EQ(zeros, 2);
    EXPECT_EQ(x.grad().to_vector<float>(), (std::vector<float>{0.0f, 0.0f}));
}

}  // namespace
}  // namespace gl
