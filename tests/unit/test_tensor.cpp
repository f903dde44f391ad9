// Unit tests: tensor, storage, allocator, RNG.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <numeric>
#include <string>

#include "base/huge_pages.hpp"
#include "base/rng.hpp"
#include "ops/ops.hpp"
#include "tensor/allocator.hpp"
#include "tensor/tensor.hpp"

namespace gl {
namespace {

using ::testing::HasSubstr;

TEST(Tensor, FactoriesShapeAndStrides) {
    const Tensor z = zeros({2, 3, 4});
    EXPECT_EQ(z.shape(), (Shape{2, 3, 4}));
    EXPECT_EQ(z.strides(), (Shape{12, 4, 1}));
    EXPECT_EQ(z.numel(), 24);
    EXPECT_EQ(z.dim(), 3);
    EXPECT_EQ(z.size(-1), 4);
    EXPECT_TRUE(z.is_contiguous());
    EXPECT_EQ(z.dtype(), DType::Float32);
    EXPECT_EQ(full({2}, 1.5, DType::Float64).to_vector<double>(), (std::vector<double>{1.5, 1.5}));
    EXPECT_EQ(scalar(3.0).dim(), 0);
    EXPECT_DOUBLE_EQ(scalar(3.0).item(), 3.0);
    EXPECT_EQ(zeros({0, 5}).numel(), 0);
}

TEST(Tensor, DataIsAlignedForVectorLoads) {
    const Tensor t = empty({17});
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(t.raw_data()) % 64, 0u);
}

TEST(Tensor, BadArgumentsGiveClearErrors) {
    EXPECT_THAT([] { empty({2, -1}); }, ::testing::ThrowsMessage<Error>(HasSubstr("negative extent")));
    EXPECT_THAT([] { from_vector<float>({1, 2, 3}, {2, 2}); },
                ::testing::ThrowsMessage<Error>(HasSubstr("3 values do not fill shape [2, 2]")));
    EXPECT_THAT([] { zeros({2, 2}).item(); }, ::testing::ThrowsMessage<Error>(HasSubstr("exactly one")));
    EXPECT_THAT([] { zeros({2}).data<double>(); }, ::testing::ThrowsMessage<Error>(HasSubstr("float32")));
    EXPECT_THAT([] { zeros({2}).size(3); }, ::testing::ThrowsMessage<Error>(HasSubstr("out of range")));
    EXPECT_THAT([] { Tensor().shape(); }, ::testing::ThrowsMessage<Error>(HasSubstr("undefined tensor")));
}

TEST(Tensor, ShapesWhoseSizeOverflowsAreRejected) {
    // 2^32 - 1 squared does not fit in int64: the count must not wrap to a small number.
    EXPECT_THAT([] { numel_of({0xFFFFFFFF, 0xFFFFFFFF}); },
                ::testing::ThrowsMessage<Error>(HasSubstr("shape [4294967295, 4294967295] has more than 2^63 elements")));
    EXPECT_THAT([] { empty({0xFFFFFFFF, 0xFFFFFFFF}); }, ::testing::ThrowsMessage<Error>(HasSubstr("2^63")));
    // 2^62 elements fit in int64, their 2^64 bytes of float32 do not fit in size_t.
    EXPECT_THAT([] { empty({std::int64_t{1} << 62}); },
                ::testing::ThrowsMessage<Error>(HasSubstr("float32 needs more than 2^64 bytes")));
}

TEST(Tensor, AnEmptyShapeWithHugeExtentsHoldsNothing) {
    const Tensor t = empty({0, 0xFFFFFFFF, 0xFFFFFFFF});
    EXPECT_EQ(t.numel(), 0);
    EXPECT_EQ(t.strides()[2], 1);
    EXPECT_EQ(t.strides()[1], 0xFFFFFFFF);
}

TEST(Tensor, ViewsShareStorageAndCloneDoesNot) {
    Tensor a = from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3});
    Tensor v = t(a);
    EXPECT_EQ(v.shape(), (Shape{3, 2}));
    EXPECT_FALSE(v.is_contiguous());
    EXPECT_EQ(v.storage(), a.storage());
    EXPECT_DOUBLE_EQ(v.at({2, 1}), 6.0);
    EXPECT_EQ(v.to_vector<float>(), (std::vector<float>{1, 4, 2, 5, 3, 6}));
    Tensor c = v.clone();
    EXPECT_TRUE(c.is_contiguous());
    a.data<float>()[0] = 100;
    EXPECT_DOUBLE_EQ(v.at({0, 0}), 100.0);
    EXPECT_DOUBLE_EQ(c.at({0, 0}), 1.0);
}

TEST(Tensor, ToDtypeConverts) {
    const Tensor a = from_vector<float>({1.5f, -2.0f}, {2});
    EXPECT_EQ(to_dtype(a, DType::Float64).to_vector<double>(), (std::vector<double>{1.5, -2.0}));
    EXPECT_EQ(to_dtype(a, DType::Int32).to_vector<std::int32_t>(), (std::vector<std::int32_t>{1, -2}));
}

TEST(Tensor, StrShowsShapeAndValues) {
    EXPECT_THAT(from_vector<float>({1, 2}, {2}).str(), HasSubstr("shape=[2], dtype=float32, [1, 2]"));
}

class CountingAllocator final : public Allocator {
public:
    void* allocate(std::size_t bytes) override {
        ++allocations;
        live += static_cast<std::int64_t>(bytes);
        return cpu_allocator().allocate(bytes);
    }
    void deallocate(void* p, std::size_t bytes) override {
        live -= static_cast<std::int64_t>(bytes);
        cpu_allocator().deallocate(p, bytes);
    }
    const char* name() const override { return "counting"; }
    std::atomic<int> allocations{0};
    std::atomic<std::int64_t> live{0};
};

TEST(Tensor, AllocatorIsPluggable) {
    CountingAllocator counting;
    set_default_cpu_allocator(&counting);
    {
        Tensor a = zeros({10, 10});
        Tensor v = t(a);  // a view allocates nothing
        EXPECT_EQ(counting.allocations.load(), 1);
        EXPECT_EQ(counting.live.load(), 400);
    }
    set_default_cpu_allocator(nullptr);
    EXPECT_EQ(counting.live.load(), 0) << "storage must return its bytes to the allocator it came from";
}

// The VMA of /proc/self/smaps that holds @p p: its "THPeligible" value ("" if not found).
std::string thp_eligible_at(const void* p) {
    std::ifstream smaps("/proc/self/smaps");
    const auto address = reinterpret_cast<std::uintptr_t>(p);
    std::string line;
    bool inside = false;
    while (std::getline(smaps, line)) {
        std::uintptr_t lo = 0, hi = 0;
        if (std::sscanf(line.c_str(), "%" SCNxPTR "-%" SCNxPTR, &lo, &hi) == 2) {  // a mapping's first line
            inside = lo <= address && address < hi;
        } else if (inside && line.rfind("THPeligible:", 0) == 0) {
            return line.substr(line.find_last_of(' ') + 1);
        }
    }
    return "";
}

TEST(Tensor, LargeBlocksStartOnAHugePageAndAskForHugePages) {
    constexpr std::size_t kHuge = kHugePageBytes;
    Allocator& cpu = cpu_allocator();
    void* small = cpu.allocate(1000);
    void* large = cpu.allocate(3 * kHuge + 100);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(small) % 64, 0u);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(large) % kHuge, 0u);
    std::memset(large, 1, 3 * kHuge + 100);  // all of it is usable
    std::ifstream mode("/sys/kernel/mm/transparent_hugepage/enabled");
    std::string modes;
    std::getline(mode, modes);
    const std::string eligible = thp_eligible_at(large);
    cpu.deallocate(small, 1000);
    cpu.deallocate(large, 3 * kHuge + 100);
    if (modes.empty() || modes.find("[never]") != std::string::npos || eligible.empty())
        GTEST_SKIP() << "this kernel offers no transparent huge pages (or no smaps): only the alignment was checked";
    EXPECT_EQ(eligible, "1") << "a large block should be marked for transparent huge pages (madvise)";
}

TEST(Rng, SameSeedSameNumbers) {
    Rng a(42), b(42), c(43);
    for (int i = 0; i < 100; ++i) EXPECT_EQ(a.next_u64(), b.next_u64());
    EXPECT_NE(Rng(42).next_u64(), c.next_u64());
}

TEST(Rng, DistributionsHaveTheRightMoments) {
    Rng rng(1);
    double sum = 0, sum_sq = 0, u_sum = 0;
    const int n = 200000;
    for (int i = 0; i < n; ++i) {
        const double x = rng.normal();
        sum += x;
        sum_sq += x * x;
        u_sum += rng.uniform();
    }
    EXPECT_NEAR(sum / n, 0.0, 0.01);
    EXPECT_NEAR(sum_sq / n, 1.0, 0.01);
    EXPECT_NEAR(u_sum / n, 0.5, 0.01);
}

TEST(Rng, PermutationIsAPermutation) {
    Rng rng(5);
    std::vector<std::size_t> p = rng.permutation(1000);
    std::vector<std::size_t> sorted = p;
    std::sort(sorted.begin(), sorted.end());
    std::vector<std::size_t> expected(1000);
    std::iota(expected.begin(), expected.end(), std::size_t{0});
    EXPECT_EQ(sorted, expected);
    EXPECT_NE(p, expected);
}

}  // namespace
}  // namespace gl
