// Lab 07 graded tests: gradient checkpointing and the caching allocator.
// Points per test are in labs/07-memory/rubric.json. Nothing here times anything: the
// checks are bit-for-bit gradients, exact byte counts and exact hit counts.
//
// The student's code is called only inside graded::student (graded.hpp): the grader
// records its results in a sandbox and checks them in this program built from the
// reference. Byte counts and hit counts are what the tracking allocator and the cache's
// statistics counted inside the student's process.
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
#include "graded.hpp"

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

}  // namespace
}  // namespace gl

/// The gradients are recorded as the parameters' and then the input's.
template <>
struct gl::graded::Codec<gl::Gradients> {
    static void write(Writer& w, const gl::Gradients& g) {
        Codec<std::vector<std::vector<float>>>::write(w, g.params);
        Codec<std::vector<float>>::write(w, g.input);
    }
    static gl::Gradients read(Reader& r) {
        gl::Gradients g;
        g.params = Codec<std::vector<std::vector<float>>>::read(r);
        g.input = Codec<std::vector<float>>::read(r);
        return g;
    }
};

/// The cache's statistics are recorded field by field (hit_rate() is computed from them).
template <>
struct gl::graded::Codec<gl::memory::CacheStats> {
    static void write(Writer& w, const gl::memory::CacheStats& s) {
        for (const std::size_t v : {s.hits, s.misses, s.bytes_in_use, s.bytes_cached, s.blocks_cached, s.peak_reserved})
            w.put<std::uint64_t>(v);
    }
    static gl::memory::CacheStats read(Reader& r) {
        gl::memory::CacheStats s;
        for (std::size_t* v : {&s.hits, &s.misses, &s.bytes_in_use, &s.bytes_cached, &s.blocks_cached, &s.peak_reserved})
            *v = r.get<std::uint64_t>();
        return s;
    }
};

namespace gl {
namespace {

// ---- Task 1: checkpoint() ---------------------------------------------------------------

TEST(Lab07, CheckpointGradientsAreBitIdentical) {
    const Gradients plain = gradients_with(0);
    for (std::size_t segments : {1u, 2u, 3u, 9u}) {
        const Gradients ckpt = graded::student<Gradients>("gradients", [&] { return gradients_with(segments); });
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
    // Recomputations counted during the forward pass, then during the backward pass.
    const auto [forward, backward] = graded::student<std::pair<std::int64_t, std::int64_t>>("recomputes", [] {
        Rng rng(1);
        auto net = nn::make_deep_mlp(rng, kLayers, kWidth, kIn, kClasses);
        const Tensor x = randn({kBatch, kIn}, rng);
        const std::size_t before = checkpoint_recompute_count();
        const Tensor out = nn::checkpoint_sequential(*net, 3, x);
        const std::size_t after_forward = checkpoint_recompute_count();
        sum(out).backward();
        return std::pair<std::int64_t, std::int64_t>(after_forward - before, checkpoint_recompute_count() - after_forward);
    });
    EXPECT_EQ(forward, 0) << "the forward pass must not recompute anything";
    EXPECT_EQ(backward, 3) << "backward must run each of the 3 segments again, once";
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
        const auto peak = graded::student<std::uint64_t>("peak", [&] { return peak_saved_bytes(k); });
        EXPECT_EQ(peak, expected)
            << "with " << k << " segments the peak of saved activations should be " << expected
            << " bytes: keep only each segment's input (run fn with recording off)";
    }
}

// ---- Task 2: the segment policy ---------------------------------------------------------

TEST(Lab07, SegmentPolicyIsSqrtN) {
    const auto got = graded::student<std::vector<std::uint64_t>>("sqrt_segments", [] {
        std::vector<std::uint64_t> out;
        for (std::size_t n : {0u, 1u, 2u, 9u, 33u, 100u}) out.push_back(nn::sqrt_segments(n));
        return out;
    });
    ASSERT_EQ(got.size(), 6u);
    EXPECT_EQ(got[0], 0u);
    EXPECT_EQ(got[1], 1u);
    EXPECT_EQ(got[2], 1u);
    EXPECT_EQ(got[3], 3u);
    EXPECT_EQ(got[4], 6u) << "sqrt(33) = 5.74 rounds to 6";
    EXPECT_EQ(got[5], 10u);
}

TEST(Lab07, SegmentBoundsAreEvenLongerFirst) {
    using Bounds = std::vector<std::pair<std::size_t, std::size_t>>;
    const auto bounds = [](std::size_t n, std::size_t k) {
        return graded::student<Bounds>("segment_bounds", [&] { return nn::segment_bounds(n, k); });
    };
    EXPECT_EQ(bounds(7, 3), (Bounds{{0, 3}, {3, 5}, {5, 7}}));
    EXPECT_EQ(bounds(4, 4), (Bounds{{0, 1}, {1, 2}, {2, 3}, {3, 4}}));
    EXPECT_EQ(bounds(3, 10), (Bounds{{0, 1}, {1, 2}, {2, 3}})) << "more segments than modules";
    EXPECT_EQ(bounds(5, 0), (Bounds{{0, 5}})) << "0 segments means one";
    const Bounds b33 = bounds(33, 6);
    ASSERT_FALSE(b33.empty());
    EXPECT_EQ(b33.back(), (std::pair<std::size_t, std::size_t>{28, 33}));
}

// ---- Task 3: the caching allocator ------------------------------------------------------

// A training-like trace: each step allocates the same sizes (in a varying order) and
// frees them all. Step 1 misses on every size class; steps 2 and 3 hit every time.
TEST(Lab07, CachingAllocatorHitRateOnAScriptedTrace) {
    const std::vector<std::size_t> sizes = {4096, 100000, 4000, 65536, 100000, 300, 1 << 20};
    const auto st = graded::student<memory::CacheStats>("stats", [&] {
        memory::CachingAllocator cache;
        for (int step = 0; step < 3; ++step) {
            std::vector<std::pair<void*, std::size_t>> live;
            for (std::size_t i = 0; i < sizes.size(); ++i) {
                const std::size_t s = sizes[(i + step) % sizes.size()];
                live.emplace_back(cache.allocate(s), s);
            }
            for (auto& [p, s] : live) cache.deallocate(p, s);
        }
        return cache.stats();
    });
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
    // Whether b and c got a's block, the statistics after b, and after c.
    const auto [b_is_a, c_is_a, after_b, after_c] =
        graded::student<std::tuple<bool, bool, memory::CacheStats, memory::CacheStats>>("blocks", [] {
            memory::CachingAllocator cache;
            void* a = cache.allocate(1000);  // class 1024
            cache.deallocate(a, 1000);
            void* b = cache.allocate(2000);  // class 2048: the cached 1024-byte block is too small
            const auto stats_b = cache.stats();
            void* c = cache.allocate(1024);
            const auto stats_c = cache.stats();
            cache.deallocate(b, 2000);
            cache.deallocate(c, 1024);
            return std::tuple{a == b, a == c, stats_b, stats_c};
        });
    EXPECT_FALSE(b_is_a);
    EXPECT_EQ(after_b.hits, 0u);
    EXPECT_TRUE(c_is_a) << "a request of the same class should reuse the cached block";
    EXPECT_EQ(after_c.bytes_in_use, 1024u + 2048u);
    EXPECT_EQ(after_c.bytes_cached, 0u);
}

}  // namespace
}  // namespace gl
