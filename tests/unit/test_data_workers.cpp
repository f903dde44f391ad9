// Unit tests of the data loader with worker threads (core/data/prefetcher.hpp,
// dataloader.hpp) and of pinned batches (pinned_memory.hpp): order, exactly-once,
// worker-count-independent augmentation, the bounded queue, errors, early exit, a hung
// worker. Nothing here is timed except against generous ceilings that only a deadlock
// reaches.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <set>

#include "data_fixtures.hpp"
#include "thrown_message.hpp"

namespace gl::test {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using namespace std::chrono_literals;

TEST(DataWorkers, BatchesArriveInSamplerOrderEachSampleOnce) {
    const auto data = std::make_shared<AugmentedCounter>(103);
    const DataLoader serial(data, {.batch_size = 4, .shuffle = true, .seed = 5});
    const std::vector<std::size_t> expected = sample_order(serial, 1);
    for (std::size_t workers : {1u, 2u, 3u, 8u}) {
        const DataLoader loader(data, {.batch_size = 4, .shuffle = true, .seed = 5, .num_workers = workers});
        const std::vector<std::size_t> order = sample_order(loader, 1);
        EXPECT_EQ(order, expected) << "with " << workers << " workers";
        std::vector<std::size_t> sorted = order;
        std::sort(sorted.begin(), sorted.end());
        std::vector<std::size_t> all(103);
        std::iota(all.begin(), all.end(), std::size_t{0});
        EXPECT_EQ(sorted, all) << "every sample exactly once, with " << workers << " workers";
    }
}

TEST(DataWorkers, AugmentationIsTheSameWhateverTheWorkerCount) {
    // PyTorch seeds each worker process, so its random crops depend on num_workers; here
    // each sample's generator depends on (seed, epoch, index) only.
    const auto data = std::make_shared<AugmentedCounter>(50);
    const auto with = [&](std::size_t workers, std::uint64_t seed) {
        return all_batches(DataLoader(data, {.batch_size = 7, .shuffle = true, .seed = seed, .num_workers = workers}), 2);
    };
    const auto reference = with(0, 9);
    for (std::size_t workers : {1u, 2u, 5u}) EXPECT_EQ(with(workers, 9), reference) << workers << " workers";
    EXPECT_NE(with(2, 10), reference) << "another seed must give other augmentation";
    const DataLoader loader(data, {.batch_size = 7, .seed = 9, .num_workers = 2});
    EXPECT_NE(all_batches(loader, 0), all_batches(loader, 1)) << "each epoch must augment anew";
}

TEST(DataWorkers, DistributedSamplerSharesStillCoverTheEpoch) {
    const auto data = std::make_shared<AugmentedCounter>(41);
    std::multiset<std::size_t> seen;
    for (std::size_t rank = 0; rank < 3; ++rank) {
        const auto sampler = std::make_shared<DistributedSampler>(3, rank, true, 4);
        const DataLoader serial(data, {.batch_size = 5}, sampler);
        const DataLoader loader(data, {.batch_size = 5, .num_workers = 2}, sampler);
        const auto order = sample_order(loader, 3);
        EXPECT_EQ(order, sample_order(serial, 3)) << "rank " << rank;
        seen.insert(order.begin(), order.end());
    }
    EXPECT_EQ(seen.size(), 42u);  // 41 examples, padded by one to a multiple of 3
    for (std::size_t i = 0; i < 41; ++i) EXPECT_GE(seen.count(i), 1u) << "sample " << i << " missing";
}

TEST(DataWorkers, WorkersStayWithinThePrefetchBound) {
    // 2 workers x prefetch_factor 3: at most 6 batches made ahead of the loop.
    const auto data = std::make_shared<AugmentedCounter>(200);
    const DataLoader loader(data, {.batch_size = 2, .num_workers = 2, .prefetch_factor = 3});
    const EpochRange range = loader.epoch(0);
    auto it = range.begin();  // batch 0 handed out; the workers fill the queue behind it
    // Wait (up to 10 s) until the workers have filled the queue: 1 + 6 batches = 14 samples.
    for (int i = 0; i < 1000 && data->made() < 14; ++i) std::this_thread::sleep_for(10ms);
    std::this_thread::sleep_for(50ms);  // room for a (wrong) worker to run past the bound
    EXPECT_EQ(data->made(), 14u) << "the workers must fill exactly prefetch_factor x num_workers batches ahead";
    EXPECT_EQ(range.peak_ahead(), 6u);
    std::size_t batches = 1;
    for (++it; it != range.end(); ++it) ++batches;
    EXPECT_EQ(batches, 100u);
    EXPECT_LE(range.peak_ahead(), 6u);
}

TEST(DataWorkers, AWorkersExceptionReachesTheLoopWithTheSampleIndex) {
    const auto data = std::make_shared<AugmentedCounter>(40, 17);
    for (std::size_t workers : {0u, 1u, 3u}) {
        const DataLoader loader(data, {.batch_size = 4, .num_workers = workers});
        std::size_t batches_before = 0;
        const std::string message = thrown_message([&] {
            for (const Batch& batch : loader.epoch(2)) {
                (void)batch;
                ++batches_before;
            }
        });
        EXPECT_THAT(message, AllOf(HasSubstr("epoch 2"), HasSubstr("batch 4"), HasSubstr("sample 17"),
                                   HasSubstr("decoder exploded on 17")))
            << workers << " workers";
        EXPECT_EQ(batches_before, 4u) << "batches 0..3 arrive before the failing one";
    }
}

TEST(DataWorkers, LeavingAnEpochEarlyStopsAndJoinsTheWorkers) {
    const auto data = std::make_shared<AugmentedCounter>(4000);
    const DataLoader loader(data, {.batch_size = 2, .num_workers = 3});
    const bool finished = finishes_within(20s, [&] {
        for (const Batch& batch : loader.epoch(0))
            if (batch.inputs.at({0, 0}) >= 4.0) break;
    });
    ASSERT_TRUE(finished) << "breaking out of the loop deadlocked";
    EXPECT_LT(data->made(), 4000u / 2) << "the workers kept making batches after the loop left";

    const bool unwound = finishes_within(20s, [&] {
        try {
            for (const Batch& batch : loader.epoch(1))
                if (batch.inputs.at({0, 0}) >= 0.0) throw std::runtime_error("loss is NaN");
        } catch (const std::runtime_error&) {
        }
    });
    EXPECT_TRUE(unwound) << "an exception in the loop body deadlocked the workers' shutdown";
}

TEST(DataWorkers, AHungWorkerIsReportedAfterTheTimeout) {
    const auto data = std::make_shared<AugmentedCounter>(20, AugmentedCounter::kNone, 0);
    const DataLoader loader(data, {.batch_size = 2, .num_workers = 2, .timeout_ms = 300});
    std::string message;
    const bool returned = finishes_within(20s, [&] {
        try {
            for (const Batch& batch : loader.epoch(0)) (void)batch;
        } catch (const Error& e) {
            message = e.what();
        }
        data->release();  // after the range is gone: the hung worker was left behind
    });
    ASSERT_TRUE(returned) << "a hung worker hung the loop despite timeout_ms";
    EXPECT_THAT(message, AllOf(HasSubstr("no batch 0"), HasSubstr("300 ms"), HasSubstr("hung")));
    for (int i = 0; i < 2000 && data->hangs_returned() == 0; ++i) std::this_thread::sleep_for(5ms);
    EXPECT_EQ(data->hangs_returned(), 1u);
}

TEST(DataWorkers, StoppingAfterATimeoutAbandonsOnlyTheHungWorker) {
    const auto data = std::make_shared<AugmentedCounter>(20, AugmentedCounter::kNone, 5);
    const DataLoader loader(data, {.batch_size = 2, .num_workers = 3, .timeout_ms = 200});
    {
        const EpochRange range = loader.epoch(0);
        auto it = range.begin();  // batch 0; batch 2 (sample 5) hangs
        ++it;
        EXPECT_THAT(thrown_message([&] { ++it; }), HasSubstr("no batch 2"));
        range.stop();
        EXPECT_EQ(range.abandoned_workers(), 1u);
        data->release();
    }
    for (int i = 0; i < 2000 && data->hangs_returned() == 0; ++i) std::this_thread::sleep_for(5ms);
    EXPECT_EQ(data->hangs_returned(), 1u);
    std::this_thread::sleep_for(20ms);  // let the abandoned worker see `stopping` and exit
}

TEST(DataWorkers, AllWorkersJoinAfterAFullEpoch) {
    const auto data = std::make_shared<AugmentedCounter>(30);
    const DataLoader loader(data, {.batch_size = 3, .num_workers = 4, .timeout_ms = 5000});
    const EpochRange range = loader.epoch(0);
    std::size_t n = 0;
    for (const Batch& batch : range) n += static_cast<std::size_t>(batch.inputs.size(0));
    EXPECT_EQ(n, 30u);
    EXPECT_EQ(range.abandoned_workers(), 0u);
    EXPECT_GE(range.data_wait().count(), 0);
}

/// Counts what it hands out, to show the loader uses the provider it is given.
class CountingPinnedProvider : public PinnedMemoryProvider {
public:
    void* allocate(std::size_t bytes) override {
        ++allocations;
        return cpu_allocator().allocate(bytes);
    }
    void deallocate(void* ptr, std::size_t bytes) override { cpu_allocator().deallocate(ptr, bytes); }
    const char* name() const override { return "counting-pinned"; }
    std::size_t locked_bytes() const override { return 0; }
    std::size_t unlocked_fallback_bytes() const override { return 0; }
    std::atomic<std::size_t> allocations{0};
};

TEST(PinMemory, PinnedBatchesHoldTheSameDataInProviderMemory) {
    const auto data = std::make_shared<AugmentedCounter>(12);
    const auto plain = all_batches(DataLoader(data, {.batch_size = 5, .seed = 3}), 0);
    const DataLoader pinned(data, {.batch_size = 5, .seed = 3, .num_workers = 2, .pin_memory = true});
    std::vector<std::vector<float>> got;
    for (const Batch& batch : pinned.epoch(0)) {
        EXPECT_STREQ(batch.inputs.storage()->allocator().name(), "mlock-pinned");
        EXPECT_STREQ(batch.targets.storage()->allocator().name(), "mlock-pinned");
        const MlockPinnedProvider& p = default_pinned_provider();
        EXPECT_GE(p.locked_bytes() + p.unlocked_fallback_bytes(), batch.inputs.numel() * sizeof(float));
        got.push_back(batch.inputs.to_vector<float>());
    }
    EXPECT_EQ(got, plain);

    CountingPinnedProvider counting;
    const DataLoader custom(data, {.batch_size = 5, .pin_memory = true, .pinned_provider = &counting});
    for (const Batch& batch : custom.epoch(0)) EXPECT_STREQ(batch.inputs.storage()->allocator().name(), "counting-pinned");
    EXPECT_EQ(counting.allocations.load(), 6u);  // inputs and targets of 3 batches
}

TEST(PinMemory, MlockProviderReturnsEveryByte) {
    MlockPinnedProvider provider;
    void* a = provider.allocate(10000);
    void* b = provider.allocate(1);
    EXPECT_EQ(provider.locked_bytes() + provider.unlocked_fallback_bytes(), 10001u);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(a) % 64, 0u);
    provider.deallocate(a, 10000);
    provider.deallocate(b, 1);
    EXPECT_EQ(provider.locked_bytes() + provider.unlocked_fallback_bytes(), 0u);
}

TEST(DataWorkers, AutotuneKeepsTheFastestMeasuredCount) {
    const auto data = std::make_shared<AugmentedCounter>(64);
    const DataLoader loader(data, {.batch_size = 4});
    const WorkerTuning tuning = autotune_workers(loader, 3, 4);
    ASSERT_FALSE(tuning.batches_per_second.empty());
    ASSERT_LT(tuning.best, tuning.batches_per_second.size());
    EXPECT_EQ(*std::max_element(tuning.batches_per_second.begin(), tuning.batches_per_second.end()),
              tuning.batches_per_second[tuning.best]);
    const DataLoader automatic(data, {.batch_size = 4, .num_workers = kAutoWorkers});
    EXPECT_LE(automatic.num_workers(), 2 * std::max(1u, std::thread::hardware_concurrency()));
    EXPECT_EQ(sample_order(automatic, 0), sample_order(loader, 0));
}

TEST(DataWorkers, RejectsAZeroPrefetchFactor) {
    EXPECT_THAT(thrown_message([] { DataLoader(std::make_shared<AugmentedCounter>(4), {.num_workers = 2, .prefetch_factor = 0}); }),
                HasSubstr("prefetch_factor must be at least 1"));
}

}  // namespace
}  // namespace gl::test
