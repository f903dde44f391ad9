// Unit tests of the overflow-checked size arithmetic (core/base/checked_arithmetic.hpp),
// at the edges where a plain multiplication would wrap around.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <vector>

#include "base/checked_arithmetic.hpp"

namespace gl {
namespace {

constexpr std::int64_t kMax64 = std::numeric_limits<std::int64_t>::max();
constexpr std::uint64_t kMaxU64 = std::numeric_limits<std::uint64_t>::max();

TEST(CheckedMul, ProductsThatFitComeBack) {
    EXPECT_EQ(checked_mul<std::int64_t>(60000, 784), 47040000);
    EXPECT_EQ(checked_mul<std::int64_t>(-3, 7), -21);
    EXPECT_EQ(checked_mul<std::int64_t>(kMax64, 1), kMax64);
    EXPECT_EQ(checked_mul<std::uint64_t>(std::uint64_t{1} << 32, (std::uint64_t{1} << 32) - 1),
              kMaxU64 - ((std::uint64_t{1} << 32) - 1));
}

TEST(CheckedMul, OverflowIsReportedNotWrapped) {
    // Two IDX extents of 2^32 - 1: the product is about 1.8e19, beyond int64 (9.2e18).
    EXPECT_FALSE(checked_mul<std::int64_t>(0xFFFFFFFF, 0xFFFFFFFF).has_value());
    EXPECT_FALSE(checked_mul<std::int64_t>(kMax64, 2).has_value());
    EXPECT_FALSE(checked_mul<std::int64_t>(std::numeric_limits<std::int64_t>::min(), -1).has_value());
    EXPECT_FALSE(checked_mul<std::uint64_t>(std::uint64_t{1} << 32, std::uint64_t{1} << 32).has_value());
    EXPECT_FALSE(checked_mul<std::size_t>(std::size_t{1} << 62, 4).has_value());
}

TEST(CheckedProduct, MultipliesAllFactors) {
    EXPECT_EQ(checked_product(std::vector<std::int64_t>{}), 1);
    EXPECT_EQ(checked_product(std::vector<std::int64_t>{60000, 28, 28}), 47040000);
    EXPECT_FALSE(checked_product(std::vector<std::int64_t>{0xFFFFFFFF, 0xFFFFFFFF, 2}).has_value());
    // Each pair fits; the whole does not.
    EXPECT_FALSE(checked_product(std::vector<std::int64_t>{1 << 30, 1 << 30, 1 << 30, 1 << 30}).has_value());
}

TEST(CheckedProduct, AZeroFactorWinsOverHugeOnes) {
    // The overflow would come first in order; the product is still 0.
    EXPECT_EQ(checked_product(std::vector<std::int64_t>{0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0}), 0);
    EXPECT_EQ(checked_product(std::vector<std::uint64_t>{kMaxU64, kMaxU64, 0}), 0u);
}

}  // namespace
}  // namespace gl
