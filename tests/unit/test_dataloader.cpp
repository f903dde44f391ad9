// Unit tests of datasets, samplers and the data loader (core/data/dataset.hpp,
// sampler.hpp, dataloader.hpp) on a small in-memory dataset whose inputs say which
// example they are.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <thread>

#include "data/dataloader.hpp"
#include "parallel/thread_pool.hpp"
#include "thrown_message.hpp"

namespace gl::test {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

/// n examples; example i has inputs (i, 10 i) and target i % 3.
std::shared_ptr<TensorDataset> numbered_dataset(std::size_t n) {
    std::vector<float> inputs;
    std::vector<std::int32_t> targets;
    for (std::size_t i = 0; i < n; ++i) {
        inputs.push_back(static_cast<float>(i));
        inputs.push_back(static_cast<float>(10 * i));
        targets.push_back(static_cast<std::int32_t>(i % 3));
    }
    const auto rows = static_cast<std::int64_t>(n);
    return std::make_shared<TensorDataset>(from_vector(inputs, {rows, 2}), from_vector(targets, {rows}), 3);
}

/// The example numbers of a batch of numbered_dataset, checking inputs and targets agree.
std::vector<std::size_t> example_ids(const Batch& batch) {
    std::vector<std::size_t> ids;
    const std::int64_t b = batch.inputs.size(0);
    EXPECT_EQ(batch.inputs.shape(), (Shape{b, 2}));
    EXPECT_EQ(batch.targets.shape(), (Shape{b}));
    EXPECT_EQ(batch.targets.dtype(), DType::Int32);
    for (std::int64_t r = 0; r < b; ++r) {
        const auto id = static_cast<std::size_t>(batch.inputs.at({r, 0}));
        EXPECT_EQ(batch.inputs.at({r, 1}), 10.0 * static_cast<double>(id));
        EXPECT_EQ(batch.targets.at({r}), static_cast<double>(id % 3));
        ids.push_back(id);
    }
    return ids;
}

/// Every example number of one epoch, in visiting order, and the batch sizes seen.
std::vector<std::size_t> epoch_order(const DataLoader& loader, std::uint64_t epoch,
                                     std::vector<std::int64_t>* batch_sizes = nullptr) {
    std::vector<std::size_t> order;
    for (const Batch& batch : loader.epoch(epoch)) {
        const auto ids = example_ids(batch);
        order.insert(order.end(), ids.begin(), ids.end());
        if (batch_sizes) batch_sizes->push_back(batch.inputs.size(0));
    }
    return order;
}

std::vector<std::size_t> iota_vector(std::size_t n) {
    std::vector<std::size_t> v(n);
    std::iota(v.begin(), v.end(), std::size_t{0});
    return v;
}

// ---------------------------------------------------------------------------------------
// Datasets

TEST(TensorDataset, GathersExamplesInTheGivenOrder) {
    const auto data = numbered_dataset(6);
    EXPECT_EQ(data->size(), 6u);
    EXPECT_EQ(data->example_shape(), (Shape{2}));
    EXPECT_EQ(example_ids(data->get_batch({4, 0, 4, 2})), (std::vector<std::size_t>{4, 0, 4, 2}));
}

TEST(TensorDataset, RejectsBadIndexLists) {
    const auto data = numbered_dataset(6);
    EXPECT_THAT(thrown_message([&] { data->get_batch({}); }), HasSubstr("the index list is empty"));
    EXPECT_THAT(thrown_message([&] { data->get_batch({1, 6}); }),
                HasSubstr("index 6 (position 1 in the list) is out of range for a dataset of 6"));
}

TEST(TensorDataset, RejectsTargetsOutOfRange) {
    const Tensor inputs = zeros({3, 2});
    const Tensor targets = from_vector<std::int32_t>({0, 2, 3}, {3});
    EXPECT_THAT(thrown_message([&] { TensorDataset(inputs, targets, 3); }),
                HasSubstr("target 3 at index 2 is out of range 0..2"));
    const Tensor negative = from_vector<std::int32_t>({0, -1, 1}, {3});
    EXPECT_THAT(thrown_message([&] { TensorDataset(inputs, negative, 3); }),
                HasSubstr("target -1 at index 1 is out of range 0..2"));
}

TEST(TensorDataset, RejectsMismatchedOrMistypedTensors) {
    EXPECT_THAT(thrown_message([&] { TensorDataset(zeros({3, 2}), zeros({3}), 3); }),
                HasSubstr("targets must be an int32 tensor"));
    EXPECT_THAT(thrown_message([&] { TensorDataset(zeros({3, 2}), zeros({2}, DType::Int32), 3); }),
                HasSubstr("3 inputs but 2 targets"));
    EXPECT_THAT(thrown_message([&] { TensorDataset(zeros({3, 2}, DType::Int32), zeros({3}, DType::Int32), 3); }),
                HasSubstr("inputs must be a float32 tensor"));
}

TEST(TensorDataset, WideRowsAreGatheredOnTheIntraOpThreadsInOrder) {
    // Rows of 4 KiB: a batch of 64 is large enough to be split between threads. Each row
    // holds its example number in every feature; the batch must come back in the order
    // asked, whatever the thread count.
    constexpr std::int64_t kExamples = 300, kFeatures = 1024;
    std::vector<float> inputs(static_cast<std::size_t>(kExamples * kFeatures));
    std::vector<std::int32_t> targets(static_cast<std::size_t>(kExamples));
    for (std::int64_t i = 0; i < kExamples; ++i) {
        std::fill_n(inputs.begin() + i * kFeatures, kFeatures, static_cast<float>(i));
        targets[static_cast<std::size_t>(i)] = static_cast<std::int32_t>(i % 7);
    }
    const TensorDataset data(from_vector(inputs, {kExamples, kFeatures}), from_vector(targets, {kExamples}), 7);
    std::vector<std::size_t> indices;
    for (std::size_t k = 0; k < 64; ++k) indices.push_back((k * 97 + 13) % kExamples);
    const int threads_before = get_num_threads();
    for (int threads : {1, 2, 3}) {
        set_num_threads(threads);
        const Batch b = data.get_batch(indices);
        ASSERT_EQ(b.inputs.shape(), (Shape{64, kFeatures}));
        const float* x = b.inputs.data<float>();
        for (std::size_t k = 0; k < indices.size(); ++k) {
            const auto want = static_cast<float>(indices[k]);
            const auto row = static_cast<std::int64_t>(k) * kFeatures;
            EXPECT_TRUE(std::all_of(x + row, x + row + kFeatures, [&](float v) { return v == want; }))
                << "row " << k << " with " << threads << " threads";
            EXPECT_EQ(b.targets.data<std::int32_t>()[k], static_cast<std::int32_t>(indices[k] % 7));
        }
    }
    set_num_threads(threads_before);
}

TEST(TensorDataset, GetBatchIsSafeFromSeveralThreads) {
    // What loader workers will do: make different batches of one dataset at once.
    const auto data = numbered_dataset(200);
    std::vector<std::vector<std::size_t>> results(4);
    std::vector<std::thread> threads;
    for (std::size_t t = 0; t < results.size(); ++t)
        threads.emplace_back([&, t] {
            for (std::size_t i = t; i < 200; i += 4) {
                const Batch b = data->get_batch({i, 199 - i});
                results[t].push_back(static_cast<std::size_t>(b.inputs.at({0, 0}) + b.inputs.at({1, 0})));
            }
        });
    for (auto& th : threads) th.join();
    for (const auto& r : results) EXPECT_EQ(r, std::vector<std::size_t>(50, 199));
}

TEST(SubsetDataset, RenumbersTheChosenExamples) {
    const auto base = numbered_dataset(10);
    const SubsetDataset subset(base, {7, 3, 9});
    EXPECT_EQ(subset.size(), 3u);
    EXPECT_EQ(example_ids(subset.get_batch({2, 0})), (std::vector<std::size_t>{9, 7}));
    const auto first = SubsetDataset::first(base, 4);
    EXPECT_EQ(example_ids(first->get_batch({0, 1, 2, 3})), iota_vector(4));
}

TEST(SubsetDataset, RejectsIndicesOutsideTheBase) {
    const auto base = numbered_dataset(10);
    EXPECT_THAT(thrown_message([&] { SubsetDataset(base, {1, 10}); }),
                HasSubstr("index 10 (position 1) is out of range for a base dataset of 10"));
    EXPECT_THAT(thrown_message([&] { SubsetDataset::first(base, 11); }),
                HasSubstr("the first 11 examples of a dataset of 10"));
    const SubsetDataset subset(base, {1, 2});
    EXPECT_THAT(thrown_message([&] { subset.get_batch({2}); }), HasSubstr("out of range"));
}

// ---------------------------------------------------------------------------------------
// Batching

TEST(DataLoader, CountsBatchesWithAShortLastBatch) {
    const DataLoader loader(numbered_dataset(10), {.batch_size = 3});
    EXPECT_EQ(loader.num_batches(), 4u);
    std::vector<std::int64_t> sizes;
    EXPECT_EQ(epoch_order(loader, 0, &sizes), iota_vector(10));
    EXPECT_EQ(sizes, (std::vector<std::int64_t>{3, 3, 3, 1}));
}

TEST(DataLoader, DropLastSkipsTheShortBatch) {
    const DataLoader loader(numbered_dataset(10), {.batch_size = 3, .drop_last = true});
    EXPECT_EQ(loader.num_batches(), 3u);
    std::vector<std::int64_t> sizes;
    EXPECT_EQ(epoch_order(loader, 0, &sizes), iota_vector(9));
    EXPECT_EQ(sizes, (std::vector<std::int64_t>{3, 3, 3}));
}

TEST(DataLoader, ExactMultipleGivesFullBatchesEitherWay) {
    for (bool drop_last : {false, true}) {
        const DataLoader loader(numbered_dataset(9), {.batch_size = 3, .drop_last = drop_last});
        EXPECT_EQ(loader.num_batches(), 3u);
        EXPECT_EQ(loader.epoch(0).size(), 3u);
    }
}

TEST(DataLoader, OneBatchLargerThanTheDataset) {
    const DataLoader loader(numbered_dataset(5), {.batch_size = 64});
    std::vector<std::int64_t> sizes;
    EXPECT_EQ(epoch_order(loader, 0, &sizes), iota_vector(5));
    EXPECT_EQ(sizes, (std::vector<std::int64_t>{5}));
}

TEST(DataLoader, IteratorsWorkByHand) {
    const DataLoader loader(numbered_dataset(5), {.batch_size = 2});
    const EpochRange epoch = loader.epoch(0);
    auto it = epoch.begin();
    EXPECT_EQ(it.batch_index(), 0u);
    EXPECT_EQ(example_ids(*it), (std::vector<std::size_t>{0, 1}));
    ++it;
    it++;
    EXPECT_EQ(it->inputs.size(0), 1);
    ++it;
    EXPECT_TRUE(it == epoch.end());
    EXPECT_THAT(thrown_message([&] { ++it; }), HasSubstr("past the end"));
}

// ---------------------------------------------------------------------------------------
// Shuffling

TEST(DataLoader, ShuffledEpochVisitsEveryExampleOnce) {
    const DataLoader loader(numbered_dataset(103), {.batch_size = 8, .shuffle = true, .seed = 5});
    for (std::uint64_t e = 0; e < 3; ++e) {
        std::vector<std::size_t> order = epoch_order(loader, e);
        EXPECT_NE(order, iota_vector(103)) << "epoch " << e << " was not shuffled";
        std::sort(order.begin(), order.end());
        EXPECT_EQ(order, iota_vector(103)) << "epoch " << e;
    }
}

TEST(DataLoader, SameSeedReplaysTheSameOrders) {
    const DataLoader a(numbered_dataset(50), {.batch_size = 7, .shuffle = true, .seed = 42});
    const DataLoader b(numbered_dataset(50), {.batch_size = 7, .shuffle = true, .seed = 42});
    for (std::uint64_t e = 0; e < 3; ++e) EXPECT_EQ(epoch_order(a, e), epoch_order(b, e));
    EXPECT_EQ(epoch_order(a, 1), epoch_order(a, 1)) << "replaying an epoch must not depend on history";
}

TEST(DataLoader, EachEpochAndEachSeedHasItsOwnOrder) {
    const DataLoader a(numbered_dataset(50), {.batch_size = 7, .shuffle = true, .seed = 42});
    const DataLoader b(numbered_dataset(50), {.batch_size = 7, .shuffle = true, .seed = 43});
    EXPECT_NE(epoch_order(a, 0), epoch_order(a, 1));
    EXPECT_NE(epoch_order(a, 1), epoch_order(a, 2));
    EXPECT_NE(epoch_order(a, 0), epoch_order(b, 0));
    // Seed + epoch must not collide: (seed 43, epoch 0) is not (seed 42, epoch 1).
    EXPECT_NE(epoch_order(a, 1), epoch_order(b, 0));
}

TEST(DataLoader, UnshuffledOrderIsTheSameEveryEpoch) {
    const DataLoader loader(numbered_dataset(10), {.batch_size = 4});
    EXPECT_EQ(epoch_order(loader, 0), iota_vector(10));
    EXPECT_EQ(epoch_order(loader, 7), iota_vector(10));
}

/// Visits the examples backwards: a sampler written outside the library.
class ReverseSampler : public Sampler {
public:
    std::vector<std::size_t> indices(std::size_t n, std::uint64_t) const override {
        std::vector<std::size_t> order = iota_vector(n);
        std::reverse(order.begin(), order.end());
        return order;
    }
    std::size_t num_indices(std::size_t n) const override { return n; }
};

TEST(DataLoader, UsesTheGivenSampler) {
    const DataLoader loader(numbered_dataset(5), {.batch_size = 2}, std::make_shared<ReverseSampler>());
    EXPECT_EQ(epoch_order(loader, 0), (std::vector<std::size_t>{4, 3, 2, 1, 0}));
    EXPECT_EQ(loader.batch_indices(0), (std::vector<std::vector<std::size_t>>{{4, 3}, {2, 1}, {0}}));
}

/// A broken sampler: announces more indices than it returns.
class LyingSampler : public ReverseSampler {
public:
    std::size_t num_indices(std::size_t n) const override { return n + 1; }
};

TEST(DataLoader, ChecksTheSamplerKeepsItsWord) {
    const DataLoader loader(numbered_dataset(5), {.batch_size = 2}, std::make_shared<LyingSampler>());
    EXPECT_THAT(thrown_message([&] { loader.epoch(0); }),
                HasSubstr("the sampler returned 5 indices but announced 6"));
}

TEST(RandomSampler, IsAPermutationThatDependsOnSeedAndEpoch) {
    const RandomSampler s(9);
    std::vector<std::size_t> p = s.indices(20, 3);
    EXPECT_EQ(p, s.indices(20, 3));
    EXPECT_NE(p, s.indices(20, 4));
    std::sort(p.begin(), p.end());
    EXPECT_EQ(p, iota_vector(20));
    EXPECT_TRUE(s.indices(0, 0).empty());
}

// ---------------------------------------------------------------------------------------
// Invalid settings

TEST(DataLoader, RejectsInvalidSettings) {
    const auto data = numbered_dataset(10);
    EXPECT_THAT(thrown_message([&] { DataLoader(data, {.batch_size = 0}); }),
                HasSubstr("batch_size must be positive"));
    EXPECT_THAT(thrown_message([&] { DataLoader(nullptr, {}); }), HasSubstr("the dataset is null"));
    EXPECT_THAT(thrown_message([&] { DataLoader(numbered_dataset(0), {}); }),
                HasSubstr("the dataset is empty"));
    EXPECT_THAT(thrown_message([&] { DataLoader(data, {.batch_size = 11, .drop_last = true}); }),
                AllOf(HasSubstr("leaves no batch at all"), HasSubstr("batch_size 11"),
                      HasSubstr("10 examples")));
    EXPECT_THAT(thrown_message([&] { DataLoader(data, {.shuffle = true}, std::make_shared<ReverseSampler>()); }),
                HasSubstr("either shuffle = true or a sampler, not both"));
    EXPECT_THAT(thrown_message([&] { DataLoader(data, {.prefetch_factor = 0}); }),
                HasSubstr("prefetch_factor must be at least 1"));
}

TEST(DataLoader, RejectsAbsurdWorkerCounts) {
    EXPECT_THAT(thrown_message([&] { DataLoader(numbered_dataset(10), {.num_workers = 100000}); }),
                AllOf(HasSubstr("num_workers = 100000 is more than"), HasSubstr("one per core")));
}

}  // namespace
}  // namespace gl::test
