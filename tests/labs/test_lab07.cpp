// Lab 07 graded tests: gradient checkpointing and the caching allocator.
// Points per test are in labs/07-memory/rubric.json. Nothing here times anything: the
// checks are bit-for-bit gradients, exact byte counts and exact hit counts.
#include <gtest/gtest.h>

#include <cstring>

#include "autograd/checkpoint.hpp"
#include "memory/caching_allocator.hpp"
#include "memory/tracking_allocator.hpp"
#include "nn/checkpoint_sequential.hpp"
#include "nn/deep_mlp.hpp"
#include "ops/ops.hpp"
#include "optim/optimizer.hpp"
#include "training/memory_profile.hpp"

namespace gl {
namespace {

using memory::MemoryCategory;

// The model of these tests: 8 Linear-ReLU blocks of width 32 and a head, 9 modules.
constexpr std::int64_t kLayers = 8, kWidth = 32, kIn = 24, kClasses = 5, kBatch = 6;

struct Gradients {
    std::vector<std::vector<float>> params;
    std::vector<float> input;
};

// One forward and backward with @p segments (0: no checkpointing) from the same seed.
Gradients gradients_with(std::size_t segments) {
    Rng rng(42);
    auto net = nn::make_deep_mlp(rng, kLayers, kWidth, kIn, kClasses);
    Tensor x = randn({kBatch, kIn}, rng).set_requires_grad();
    Tensor y = empty({kBatch}, DType::Int32);
    for (std::int64_t i = 0; i < kBatch; ++i) y.data<std::int32_t>()[i] = static_cast<std::int32_t>(i % kClasses);
    cross_entropy(training::forward_in_segments(*net, x, segments), y).backward();
    Gradients g;
    for (const Tensor& p : net->parameters()) {
        if (!p.grad().defined()) throw Error("a parameter received no gradient");
        g.params.push_back(p.grad().to_vector<float>());
    }
    if (!x.grad().defined()) throw Error("the input received no gradient");
    g.input = x.grad().to_vector<float>();
    return g;
}

bool bit_identical(const std::vector<float>& a, const std::vector<float>& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// ---- Task 1: checkpoint() ---------------------------------------------------------------

TEST(Lab07, CheckpointGradientsAreBitIdentical) {
    const Gradients plain = gradients_with(0);
    for (std::size_t segments : {1u, 2u, 3u, 9u}) {
        const Gradients ckpt = gradients_with(segments);
        ASSERT_EQ(ckpt.params.size(), plain.params.size());
        for (std::size_t i = 0; i < plain.params.size(); ++i)
            EXPECT_TRUE(bit_identical(plain.params[i], ckpt.params[i]))
                << "with " << segments << " segments, the gradient of parameter " << i
                << " differs from the one without checkpointing: recompute with the same inputs and "
                   "backpropagate the incoming gradient through the recomputed graph";
        EXPECT_TRUE(bit_identical(plain.input, ckpt.input))
            << "with " << segments << " segments, the input's gradient differs: return each leaf's gradient";
    }
}

TEST(Lab07, CheckpointRecomputesEachSegmentOnce) {
    Rng rng(1);
    auto net = nn::make_deep_mlp(rng, kLayers, kWidth, kIn, kClasses);
    const Tensor x = randn({kBatch, kIn}, rng);
    const std::size_t before = checkpoint_recompute_count();
    const Tensor out = nn::checkpoint_sequential(*net, 3, x);
    EXPECT_EQ(checkpoint_recompute_count(), before) << "the forward pass must not recompute anything";
    sum(out).backward();
    EXPECT_EQ(checkpoint_recompute_count(), before + 3) << "backward must run each of the 3 segments again, once";
}

// Peak saved-activation bytes of one training step, measured by the tracking allocator.
std::size_t peak_saved_bytes(std::size_t segments) {
    memory::TrackingAllocator tracker;
    memory::DefaultAllocatorScope use(tracker);
    Rng rng(7);
    auto net = nn::make_deep_mlp(rng, kLayers, kWidth, kIn, kClasses);
    optim::SGD opt(net->parameters(), 0.01);
    const Tensor x = randn({kBatch, kIn}, rng);
    const Tensor y = zeros({kBatch}, DType::Int32);
    return training::measure_training_step(tracker, *net, opt, x, y, segments).peak_of(MemoryCategory::SavedActivation);
}

TEST(Lab07, CheckpointKeepsOnlySegmentInputs) {
    const std::size_t f = sizeof(float), B = kBatch;
    const std::size_t input = B * kIn * f, hidden = B * kWidth * f;
    const std::size_t loss_saves = B * kClasses * f + B * sizeof(std::int32_t);  // log-probs, targets
    // Without checkpointing: the input and every block's ReLU output.
    EXPECT_EQ(peak_saved_bytes(0), input + kLayers * hidden + loss_saves);
    // With k segments: the k segment inputs stay for the whole backward, plus the ReLU
    // outputs of the segment being recomputed (the largest segment is the first one).
    for (std::size_t k : {2u, 3u, 4u}) {
        const auto bounds = nn::segment_bounds(kLayers + 1, k);
        const std::size_t first_segment_blocks = bounds[0].second - bounds[0].first;
        const std::size_t expected = input + (k - 1) * hidden + first_segment_blocks * hidden + loss_saves;
        EXPECT_EQ(peak_saved_bytes(k), expected)
            << "with " << k << " segments the peak of saved activations should be " << expected
            << " bytes: keep only each segment's input (run fn with recording off)";
    }
}

// ---- Task 2: the segment policy ---------------------------------------------------------

TEST(Lab07, SegmentPolicyIsSqrtN) {
    EXPECT_EQ(nn::sqrt_segments(0), 0u);
    EXPECT_EQ(nn::sqrt_segments(1), 1u);
    EXPECT_EQ(nn::sqrt_segments(2), 1u);
    EXPECT_EQ(nn::sqrt_segments(9), 3u);
    EXPECT_EQ(nn::sqrt_segments(33), 6u) << "sqrt(33) = 5.74 rounds to 6";
    EXPECT_EQ(nn::sqrt_segments(100), 10u);
}

TEST(Lab07, SegmentBoundsAreEvenLongerFirst) {
    using Bounds = std::vector<std::pair<std::size_t, std::size_t>>;
    EXPECT_EQ(nn::segment_bounds(7, 3), (Bounds{{0, 3}, {3, 5}, {5, 7}}));
    EXPECT_EQ(nn::segment_bounds(4, 4), (Bounds{{0, 1}, {1, 2}, {2, 3}, {3, 4}}));
    EXPECT_EQ(nn::segment_bounds(3, 10), (Bounds{{0, 1}, {1, 2}, {2, 3}})) << "more segments than modules";
    EXPECT_EQ(nn::segment_bounds(5, 0), (Bounds{{0, 5}})) << "0 segments means one";
    EXPECT_EQ(nn::segment_bounds(33, 6).back(), (std::pair<std::size_t, std::size_t>{28, 33}));
}

// ---- Task 3: the caching allocator ------------------------------------------------------

// A training-like trace: each step allocates the same sizes (in a varying order) and
// frees them all. Step 1 misses on every size class; steps 2 and 3 hit every time.
TEST(Lab07, CachingAllocatorHitRateOnAScriptedTrace) {
    memory::CachingAllocator cache;
    const std::vector<std::size_t> sizes = {4096, 100000, 4000, 65536, 100000, 300, 1 << 20};
    for (int step = 0; step < 3; ++step) {
        std::vector<std::pair<void*, std::size_t>> live;
        for (std::size_t i = 0; i < sizes.size(); ++i) {
            const std::size_t s = sizes[(i + step) % sizes.size()];
            live.emplace_back(cache.allocate(s), s);
        }
        for (auto& [p, s] : live) cache.deallocate(p, s);
    }
    const auto st = cache.stats();
    EXPECT_EQ(st.misses, 7u) << "the first step needs a block for each of its 7 tensors";
    EXPECT_EQ(st.hits, 14u) << "steps 2 and 3 should find every block in the cache";
    EXPECT_NEAR(st.hit_rate(), 2.0 / 3.0, 1e-12);
    std::size_t reserved = 0;
    for (std::size_t s : sizes) reserved += memory::size_class(s);
    EXPECT_EQ(st.bytes_cached, reserved) << "every freed block is kept, at its size class";
    EXPECT_EQ(st.blocks_cached, sizes.size());
    EXPECT_EQ(st.bytes_in_use, 0u);
}

TEST(Lab07, CachingAllocatorServesOnlyTheSameSizeClass) {
    memory::CachingAllocator cache;
    void* a = cache.allocate(1000);  // class 1024
    cache.deallocate(a, 1000);
    void* b = cache.allocate(2000);  // class 2048: the cached 1024-byte block is too small
    EXPECT_NE(a, b);
    EXPECT_EQ(cache.stats().hits, 0u);
    void* c = cache.allocate(1024);
    EXPECT_EQ(c, a) << "a request of the same class should reuse the cached block";
    EXPECT_EQ(cache.stats().bytes_in_use, 1024u + 2048u);
    EXPECT_EQ(cache.stats().bytes_cached, 0u);
    cache.deallocate(b, 2000);
    cache.deallocate(c, 1024);
}

}  // namespace
}  // namespace gl
