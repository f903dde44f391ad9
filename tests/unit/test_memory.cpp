// Unit tests: memory accounting (tracking allocator, categories), the caching allocator,
// the page allocator, and checkpoint() corner cases. Every expectation is an exact byte
// or call count on a scripted sequence of allocations.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>

#include "autograd/checkpoint.hpp"
#include "autograd/grad_mode.hpp"
#include "memory/caching_allocator.hpp"
#include "memory/page_allocator.hpp"
#include "memory/tracking_allocator.hpp"
#include "nn/module.hpp"
#include "ops/ops.hpp"
#include "optim/optimizer.hpp"

namespace gl {
namespace {

using memory::MemoryCategory;
using memory::MemoryCategoryScope;

// A backing allocator that counts what reaches it.
class CountingAllocator final : public Allocator {
public:
    void* allocate(std::size_t bytes) override {
        ++allocations;
        bytes_live += bytes;
        return cpu_allocator().allocate(bytes);
    }
    void deallocate(void* p, std::size_t bytes) override {
        ++deallocations;
        bytes_live -= bytes;
        cpu_allocator().deallocate(p, bytes);
    }
    const char* name() const override { return "counting"; }
    std::size_t allocations = 0, deallocations = 0, bytes_live = 0;
};

// ---- Tracking allocator ----------------------------------------------------------------

TEST(Memory, TrackingCountsEachCategoryOnAScriptedTrace) {
    memory::TrackingAllocator tracker;
    void* a = tracker.allocate(100);  // temporary
    void* b = nullptr;
    {
        MemoryCategoryScope params(MemoryCategory::Parameter);
        b = tracker.allocate(300);
    }
    void* c = tracker.allocate(50);
    auto s = tracker.stats();
    EXPECT_EQ(s.current_of(MemoryCategory::Temporary), 150u);
    EXPECT_EQ(s.current_of(MemoryCategory::Parameter), 300u);
    EXPECT_EQ(s.total_current, 450u);
    tracker.deallocate(a, 100);
    tracker.set_category(c, MemoryCategory::SavedActivation);
    s = tracker.stats();
    EXPECT_EQ(s.current_of(MemoryCategory::Temporary), 0u);
    EXPECT_EQ(s.peak_of(MemoryCategory::Temporary), 150u);
    EXPECT_EQ(s.current_of(MemoryCategory::SavedActivation), 50u);
    EXPECT_EQ(s.total_peak, 450u);
    EXPECT_EQ(s.allocations, 3u);
    EXPECT_EQ(s.deallocations, 1u);
    // A conditional relabel leaves a parameter alone.
    tracker.set_category_if(b, MemoryCategory::Temporary, MemoryCategory::SavedActivation);
    EXPECT_EQ(tracker.stats().current_of(MemoryCategory::Parameter), 300u);
    tracker.reset_peaks();
    s = tracker.stats();
    EXPECT_EQ(s.peak_of(MemoryCategory::Temporary), 0u);
    EXPECT_EQ(s.total_peak, 350u);
    EXPECT_EQ(s.allocations, 0u);
    tracker.deallocate(b, 300);
    tracker.deallocate(c, 50);
    EXPECT_EQ(tracker.stats().total_current, 0u);
    EXPECT_EQ(tracker.allocate(0), nullptr);
}

TEST(Memory, SimpleNetStepIsAccountedByCategory) {
    memory::TrackingAllocator tracker;
    memory::DefaultAllocatorScope use(tracker);
    {
        Rng rng(0);
        auto net = nn::make_simple_net(rng);
        optim::Adam opt(net->parameters(), 1e-3);
        const std::size_t param_bytes = 4u * (784 * 128 + 128 + 128 * 10 + 10);
        EXPECT_EQ(tracker.stats().current_of(MemoryCategory::Parameter), param_bytes);
        EXPECT_EQ(tracker.stats().current_of(MemoryCategory::OptimizerState), 2 * param_bytes);
        const std::int64_t batch = 8;
        const Tensor x = randn({batch, 784}, rng);
        const Tensor y = zeros({batch}, DType::Int32);
        tracker.reset_peaks();
        {
            const Tensor loss = cross_entropy((*net)(x), y);
            loss.backward();
        }
        opt.step();
        const auto s = tracker.stats();
        EXPECT_EQ(s.current_of(MemoryCategory::Gradient), param_bytes);
        // Saved for backward: the input (first matmul), the hidden ReLU output (ReLU and
        // the second matmul share it), log-probabilities and targets (cross-entropy).
        // Weights are saved too but stay parameters.
        EXPECT_EQ(s.peak_of(MemoryCategory::SavedActivation), 4u * batch * (784 + 128 + 10 + 1));
        EXPECT_EQ(s.current_of(MemoryCategory::Parameter), param_bytes);
    }
    EXPECT_EQ(tracker.stats().total_current, 0u);
}

TEST(Memory, TagMemoryIgnoresUntrackedTensors) {
    const Tensor t = zeros({4});
    memory::tag_memory(t, MemoryCategory::Parameter);  // from cpu_allocator: nothing to do
    memory::tag_memory(Tensor(), MemoryCategory::Parameter);
    EXPECT_EQ(&default_cpu_allocator(), &cpu_allocator());
}

// ---- Caching allocator -----------------------------------------------------------------

TEST(Memory, SizeClassesWasteAtMostAQuarter) {
    EXPECT_EQ(memory::size_class(1), 512u);
    EXPECT_EQ(memory::size_class(512), 512u);
    EXPECT_EQ(memory::size_class(513), 640u);
    EXPECT_EQ(memory::size_class(1024), 1024u);
    EXPECT_EQ(memory::size_class(1025), 1280u);
    EXPECT_EQ(memory::size_class(3000), 3072u);
    for (std::size_t b = 1; b < 100000; b += 37) {
        const std::size_t c = memory::size_class(b);
        ASSERT_GE(c, b);
        ASSERT_LE(c, std::max<std::size_t>(512, b + b / 4));
        ASSERT_EQ(memory::size_class(c), c) << "a class is its own class";
    }
}

TEST(Memory, CachingAllocatorReusesFreedBlocksOfTheSameClass) {
    CountingAllocator backing;
    {
        memory::CachingAllocator cache(backing);
        void* a = cache.allocate(1000);   // miss: class 1024
        void* b = cache.allocate(1000);   // miss
        cache.deallocate(a, 1000);        // cached
        void* c = cache.allocate(900);    // hit: 900 is also class 1024
        EXPECT_EQ(c, a);
        void* d = cache.allocate(5000);   // miss: class 5120
        cache.deallocate(b, 1000);
        cache.deallocate(c, 900);
        cache.deallocate(d, 5000);
        auto s = cache.stats();
        EXPECT_EQ(s.hits, 1u);
        EXPECT_EQ(s.misses, 3u);
        EXPECT_EQ(s.bytes_in_use, 0u);
        EXPECT_EQ(s.bytes_cached, 2 * 1024u + 5120u);
        EXPECT_EQ(s.blocks_cached, 3u);
        EXPECT_EQ(s.peak_reserved, 2 * 1024u + 5120u);
        EXPECT_DOUBLE_EQ(s.hit_rate(), 0.25);
        EXPECT_EQ(backing.allocations, 3u);
        EXPECT_EQ(backing.deallocations, 0u) << "freed blocks stay cached";
        EXPECT_EQ(cache.empty_cache(), 2 * 1024u + 5120u);
        EXPECT_EQ(backing.deallocations, 3u);
        EXPECT_EQ(backing.bytes_live, 0u);
        EXPECT_EQ(cache.stats().bytes_cached, 0u);
        void* e = cache.allocate(1000);  // the cache is empty again: a miss
        EXPECT_EQ(cache.stats().misses, 4u);
        cache.deallocate(e, 1000);
        cache.reset_counts();
        EXPECT_EQ(cache.stats().hits + cache.stats().misses, 0u);
    }
    EXPECT_EQ(backing.bytes_live, 0u) << "the destructor returns cached blocks";
}

TEST(Memory, TrainingStepsHitTheCacheAfterTheFirst) {
    memory::CachingAllocator cache;
    memory::DefaultAllocatorScope use(cache);
    Rng rng(0);
    auto net = nn::make_simple_net(rng, 20, 16, 4);
    optim::SGD opt(net->parameters(), 0.1);
    const Tensor x = randn({8, 20}, rng);
    const Tensor y = zeros({8}, DType::Int32);
    auto step = [&] {
        opt.zero_grad();
        cross_entropy((*net)(x), y).backward();
        opt.step();
    };
    step();
    cache.reset_counts();
    step();
    step();
    EXPECT_EQ(cache.stats().misses, 0u) << "every tensor of a repeated step finds a cached block";
    EXPECT_GT(cache.stats().hits, 0u);
}

// ---- Page allocator --------------------------------------------------------------------

TEST(Memory, PageAllocatorGivesZeroedAlignedPages) {
    auto& pages = memory::page_allocator();
    auto* p = static_cast<unsigned char*>(pages.allocate(10000));
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(p) % 4096, 0u);
    EXPECT_EQ(p[0] + p[9999], 0);
    std::memset(p, 1, 10000);
    pages.deallocate(p, 10000);
    EXPECT_EQ(pages.allocate(0), nullptr);
}

// ---- checkpoint() corner cases ---------------------------------------------------------

TEST(Checkpoint, TwoInputsGetTheSameGradientsAsWithout) {
    Rng rng(3);
    const Tensor a0 = randn({3, 4}, rng), b0 = randn({3, 4}, rng);
    auto fn = [](const std::vector<Tensor>& v) { return relu(v[0] * v[1] + v[0]); };
    Tensor a = a0.clone().set_requires_grad(), b = b0.clone().set_requires_grad();
    sum(fn({a, b})).backward();
    Tensor ac = a0.clone().set_requires_grad(), bc = b0.clone().set_requires_grad();
    const std::size_t before = checkpoint_recompute_count();
    sum(checkpoint(CheckpointFn(fn), {ac, bc})).backward();
    EXPECT_EQ(checkpoint_recompute_count(), before + 1);
    EXPECT_EQ(a.grad().to_vector<float>(), ac.grad().to_vector<float>());
    EXPECT_EQ(b.grad().to_vector<float>(), bc.grad().to_vector<float>());
}

TEST(Checkpoint, IdentityAndNoGradAreHandled) {
    Tensor x = ones({2}).set_requires_grad();
    Tensor y = checkpoint(CheckpointFn1([](const Tensor& t) { return t; }), x);
    EXPECT_TRUE(x.is_leaf()) << "recording must not turn an input into a non-leaf";
    sum(y * 2.0).backward();
    EXPECT_EQ(x.grad().to_vector<float>(), (std::vector<float>{2.f, 2.f}));
    NoGradGuard off;
    const Tensor z = checkpoint(CheckpointFn1([](const Tensor& t) { return relu(t); }), x);
    EXPECT_FALSE(z.requires_grad());
}

}  // namespace
}  // namespace gl
