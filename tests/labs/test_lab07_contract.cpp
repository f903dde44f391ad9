// Lab 07 contract tests: the caching allocator's statistics after every call of random request
// sequences (frees in any order, a size class emptied and asked again, empty_cache in the middle),
// no block handed out twice; checkpointing's memory in every category, not only saved activations;
// a checkpointed function that returns its input unchanged; the segment policy and the split for
// every n. The student's code is called only through graded::student (graded.hpp), each call one
// small lambda that returns everything the checks read, so a checker that never loads it can
// decide.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <set>

#include "autograd/checkpoint.hpp"
#include "contract.hpp"
#include "graded.hpp"
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

// ---- the caching allocator -----------------------------------------------------------------

// One request of a trace: allocate `bytes`, free live block number `index` (of those
// live, in allocation order), or empty the cache.
struct Request {
    enum Kind { Allocate, Free, EmptyCache } kind;
    std::size_t bytes_or_index;
};

std::vector<Request> random_trace(std::uint64_t seed) {
    Rng rng(seed);
    const std::vector<std::size_t> sizes{1, 100, 1000, 1024, 1025, 4000, 4096, 70000, 65536};
    std::vector<Request> trace;
    std::size_t live = 0;
    for (int i = 0; i < 300; ++i) {
        const std::uint64_t r = rng.below(20);
        if (r == 0) trace.push_back({Request::EmptyCache, 0});
        else if (live > 0 && r < 10) trace.push_back({Request::Free, static_cast<std::size_t>(rng.below(live--))});
        else trace.push_back({Request::Allocate, sizes[rng.below(sizes.size())]}), ++live;
    }
    return trace;
}

// What the allocator reports after each request: hits, misses, bytes in use, bytes
// cached, blocks cached; then 1 if every live block is distinct and kept its contents.
using Observation = std::vector<double>;

TEST(Lab07, ContractCachingAllocatorStatsAfterEveryRequest) {
    for (std::uint64_t seed = 70; seed < 80; ++seed) {
        const std::vector<Request> trace = random_trace(seed);
        auto run = [&]() -> std::vector<Observation> {
            memory::CachingAllocator cache;
            std::vector<std::pair<unsigned char*, std::size_t>> live;
            std::vector<Observation> seen;
            unsigned char stamp = 0;
            for (const Request& q : trace) {
                if (q.kind == Request::Allocate) {
                    auto* p = static_cast<unsigned char*>(cache.allocate(q.bytes_or_index));
                    std::memset(p, ++stamp, q.bytes_or_index);  // the block's owner writes all of it
                    live.emplace_back(p, q.bytes_or_index);
                } else if (q.kind == Request::Free) {
                    const auto it = live.begin() + static_cast<std::ptrdiff_t>(q.bytes_or_index);
                    cache.deallocate(it->first, it->second);
                    live.erase(it);
                } else {
                    cache.empty_cache();
                }
                const memory::CacheStats s = cache.stats();
                std::set<unsigned char*> distinct;
                bool intact = true;
                for (const auto& [p, n] : live) {
                    intact = intact && distinct.insert(p).second;
                    for (std::size_t i = 1; i < n && intact; ++i) intact = p[i] == p[0];
                }
                seen.push_back({static_cast<double>(s.hits), static_cast<double>(s.misses), static_cast<double>(s.bytes_in_use),
                                static_cast<double>(s.bytes_cached), static_cast<double>(s.blocks_cached), intact ? 1.0 : 0.0});
            }
            for (const auto& [p, n] : live) cache.deallocate(p, n);
            return seen;
        };
        const std::vector<Observation> seen = graded::student<std::vector<Observation>>("caching allocator trace", run);
        ASSERT_EQ(seen.size(), trace.size());
        // The model: free blocks per size class.
        std::map<std::size_t, std::size_t> free_blocks;
        std::vector<std::size_t> live_classes;
        double hits = 0, misses = 0, in_use = 0;
        for (std::size_t i = 0; i < trace.size(); ++i) {
            const Request& q = trace[i];
            if (q.kind == Request::Allocate) {
                const std::size_t c = memory::size_class(q.bytes_or_index);
                if (free_blocks[c] > 0) --free_blocks[c], ++hits;
                else ++misses;
                in_use += static_cast<double>(c);
                live_classes.push_back(c);
            } else if (q.kind == Request::Free) {
                const std::size_t c = live_classes[q.bytes_or_index];
                live_classes.erase(live_classes.begin() + static_cast<std::ptrdiff_t>(q.bytes_or_index));
                ++free_blocks[c];
                in_use -= static_cast<double>(c);
            } else {
                free_blocks.clear();
            }
            double cached = 0, blocks = 0;
            for (const auto& [c, n] : free_blocks) cached += static_cast<double>(c * n), blocks += static_cast<double>(n);
            const std::string where = "trace " + std::to_string(seed) + ", request " + std::to_string(i + 1) + " (" +
                                      (q.kind == Request::Allocate ? "allocate " + std::to_string(q.bytes_or_index) + " bytes"
                                       : q.kind == Request::Free   ? "free a block"
                                                                   : "empty_cache") + ")";
            ASSERT_EQ(seen[i][5], 1.0) << where << ": two live allocations share a block, or a live block was overwritten";
            ASSERT_EQ(seen[i][0], hits) << where << ": hits";
            ASSERT_EQ(seen[i][1], misses) << where << ": misses";
            ASSERT_EQ(seen[i][2], in_use) << where << ": bytes_in_use (size classes of the live blocks)";
            ASSERT_EQ(seen[i][3], cached) << where << ": bytes_cached";
            ASSERT_EQ(seen[i][4], blocks) << where << ": blocks_cached";
        }
    }
}

// ---- checkpointing ---------------------------------------------------------------------------

constexpr std::int64_t kLayers = 8, kWidth = 32, kIn = 24, kClasses = 5, kBatch = 6;

// Each category's peak over one training step with @p segments (0: no checkpointing).
std::vector<double> category_peaks(std::size_t segments) {
    memory::TrackingAllocator tracker;
    memory::DefaultAllocatorScope use(tracker);
    Rng rng(7);
    auto net = nn::make_deep_mlp(rng, kLayers, kWidth, kIn, kClasses);
    optim::SGD opt(net->parameters(), 0.01);
    const Tensor x = randn({kBatch, kIn}, rng);
    const Tensor y = zeros({kBatch}, DType::Int32);
    auto run = [&]() -> std::vector<double> {
        const memory::MemoryStats s = training::measure_training_step(tracker, *net, opt, x, y, segments);
        std::vector<double> peaks;
        for (std::size_t c = 0; c < memory::kMemoryCategoryCount; ++c) peaks.push_back(static_cast<double>(s.peak[c]));
        return peaks;
    };
    return graded::student<std::vector<double>>("peak bytes per category", run);
}

TEST(Lab07, ContractCheckpointMemoryInEveryCategory) {
    // Checkpointing trades saved activations for recomputation; it must not move memory
    // into other categories: parameters, their gradients and optimizer state peak exactly
    // as without it (the gradients it hands on are temporaries, not a leaf's .grad).
    const std::vector<double> plain = category_peaks(0);
    for (std::size_t k : {1u, 2u, 3u, 9u}) {
        const std::vector<double> ckpt = category_peaks(k);
        for (MemoryCategory c : {MemoryCategory::Parameter, MemoryCategory::Gradient, MemoryCategory::OptimizerState})
            EXPECT_EQ(ckpt[static_cast<std::size_t>(c)], plain[static_cast<std::size_t>(c)])
                << "with " << k << " segments, the peak of " << memory::name_of(c)
                << " bytes differs from the step without checkpointing (tag the recomputed input gradients as "
                   "Temporary: they flow on, they are not accumulated gradients)";
    }
}

TEST(Lab07, ContractCheckpointOfAFunctionReturningItsInput) {
    // y = checkpoint(identity)(h), with h = x * w (a result) or h = w itself (a leaf): the
    // gradient must reach w, through h's own history, which the checkpoint must not
    // rewire, or into the leaf, which must stay a leaf.
    for (bool leaf : {false, true}) {
        auto run = [&](bool use_checkpoint) -> std::vector<float> {
            Tensor w = from_vector<float>({2.0f, -3.0f, 0.5f}, {3}).set_requires_grad();
            const Tensor x = from_vector<float>({1.0f, 4.0f, -2.0f}, {3});
            const Tensor h = leaf ? w : mul(x, w);
            const Tensor y = use_checkpoint ? checkpoint([](const Tensor& t) { return t; }, h) : h;
            sum(mul(y, y)).backward();
            if (!w.grad().defined()) return {};
            return w.grad().to_vector<float>();
        };
        // d(sum h^2)/dw = 2 x^2 w, or 2 w for h = w
        const std::vector<float> want = leaf ? std::vector<float>{4.0f, -6.0f, 1.0f}
                                             : std::vector<float>{2 * 2.0f * 1 * 1, 2 * -3.0f * 4 * 4, 2 * 0.5f * -2 * -2};
        ASSERT_EQ(run(false), want) << "the test's own arithmetic";
        EXPECT_EQ(graded::student<std::vector<float>>("w.grad", [&] { return run(true); }), want)
            << "checkpoint of a function that returns its input (" << (leaf ? "a leaf" : "a result")
            << "): record the node on a detached handle of the result, or the input's own history is lost";
    }
}

TEST(Lab07, ContractCheckpointLeavesItsInputsAlone) {
    // checkpoint(identity) on data x and on a result h: afterwards x is still a leaf with no
    // history, and h keeps its own history (the result is another handle).
    auto run = [&]() -> std::vector<bool> {
        Tensor w = from_vector<float>({2.0f, -3.0f}, {2}).set_requires_grad();
        const Tensor x = from_vector<float>({1.0f, 4.0f}, {2});
        const Tensor h = mul(x, w);
        const Node* h_history = h.grad_fn().get();
        const Tensor y1 = checkpoint([](const Tensor& t) { return t; }, x);
        const Tensor y2 = checkpoint([](const Tensor& t) { return t; }, h);
        return {x.grad_fn() == nullptr, h.grad_fn().get() == h_history, y2.grad_fn() != nullptr};
    };
    const std::vector<bool> got = graded::student<std::vector<bool>>("inputs after checkpoint", run);
    ASSERT_EQ(got.size(), 3u);
    EXPECT_TRUE(got[0]) << "checkpoint(identity, x) gave the data tensor x a history: record on a detached handle";
    EXPECT_TRUE(got[1]) << "checkpoint(identity, h) replaced h's own history: record on a detached handle";
    EXPECT_TRUE(got[2]) << "the checkpoint's result must be recorded (it has a history)";
}

TEST(Lab07, ContractCheckpointRecomputesWithGradientsOnlyWhereNeeded) {
    // checkpoint(fn, {a, b}) where only b needs a gradient (a is data): the recompute must
    // not ask for a's (a leaf that requires grad costs a whole extra backward GEMM).
    auto run = [&]() -> std::vector<std::int64_t> {  // for each call of fn, each input's requires_grad
        std::vector<std::int64_t> seen;
        Tensor w = from_vector<float>({1.5f, -2.0f}, {2}).set_requires_grad();
        const Tensor a = from_vector<float>({0.5f, 3.0f}, {2});
        const Tensor b = mul(from_vector<float>({1.0f, 2.0f}, {2}), w);
        const CheckpointFn fn = [&](const std::vector<Tensor>& in) {
            for (const Tensor& x : in) seen.push_back(x.requires_grad() ? 1 : 0);
            return mul(mul(in[0], in[1]), w);
        };
        sum(checkpoint(fn, std::vector<Tensor>{a, b})).backward();
        return seen;
    };
    const std::vector<std::int64_t> seen = graded::student<std::vector<std::int64_t>>("requires_grad in fn", run);
    ASSERT_EQ(seen.size(), 4u) << "fn must run twice (forward, then once in backward), with both inputs";
    EXPECT_EQ(seen[2], 0) << "the recomputed input a (data, its edge is null) must not require grad";
    EXPECT_EQ(seen[3], 1) << "the recomputed input b (its gradient is wanted) must require grad";
}

// ---- the segment policy ------------------------------------------------------------------

TEST(Lab07, ContractSegmentPolicyAndSplitForEveryN) {
    auto run = [&]() -> std::vector<double> {
        std::vector<double> out;
        for (std::size_t n = 0; n <= 2000; ++n) out.push_back(static_cast<double>(nn::sqrt_segments(n)));
        for (std::size_t n = 0; n <= 40; ++n)
            for (std::size_t k = 0; k <= 45; ++k) {
                const auto bounds = nn::segment_bounds(n, k);
                out.push_back(static_cast<double>(bounds.size()));
                for (const auto& [b, e] : bounds) out.push_back(static_cast<double>(b)), out.push_back(static_cast<double>(e));
            }
        return out;
    };
    const std::vector<double> got = graded::student<std::vector<double>>("sqrt_segments, segment_bounds", run);
    std::size_t i = 0;
    for (std::size_t n = 0; n <= 2000; ++n, ++i) {
        const double want = n == 0 ? 0.0 : std::max(1.0, std::round(std::sqrt(static_cast<double>(n))));
        ASSERT_EQ(got[i], want) << "sqrt_segments(" << n << "): sqrt(n) rounded to the nearest integer";
    }
    for (std::size_t n = 0; n <= 40; ++n)
        for (std::size_t k = 0; k <= 45; ++k) {
            const std::size_t segments = n == 0 ? 0 : std::min(std::max<std::size_t>(k, 1), n);
            ASSERT_EQ(got[i++], static_cast<double>(segments)) << "segment_bounds(" << n << ", " << k << "): segments";
            std::size_t begin = 0;
            for (std::size_t s = 0; s < segments; ++s) {
                const std::size_t length = n / segments + (s < n % segments ? 1 : 0);
                ASSERT_EQ(got[i++], static_cast<double>(begin)) << "segment_bounds(" << n << ", " << k << "), segment " << s;
                ASSERT_EQ(got[i++], static_cast<double>(begin + length))
                    << "segment_bounds(" << n << ", " << k << "), segment " << s << ": even, the longer ones first";
                begin += length;
            }
        }
}

}  // namespace
}  // namespace gl
