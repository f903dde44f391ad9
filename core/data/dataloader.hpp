/// @file
/// @brief The data loader: cuts a dataset into batches, epoch after epoch.
///
/// Owns: batch size, shuffling (through a Sampler), dropping a short last batch, and the
/// loop a training script writes:
///
/// ```cpp
/// DataLoader loader(train_set, {.batch_size = 64, .shuffle = true, .seed = 1});
/// for (std::uint64_t e = 0; e < epochs; ++e)
///     for (const Batch& batch : loader.epoch(e)) step(batch.inputs, batch.targets);
/// ```
///
/// An epoch is planned as a list of index lists, and each batch is made by
/// Dataset::get_batch on one list. That split is what lets worker threads (a later
/// issue: num_workers, prefetch_batches) make batches concurrently without changing
/// this interface. Knows nothing about models or devices.
#pragma once

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <memory>
#include <vector>

#include "data/dataset.hpp"
#include "data/sampler.hpp"

namespace gl {

/// Settings of a DataLoader.
struct DataLoaderOptions {
    std::size_t batch_size = 64;       ///< examples per batch (positive)
    bool shuffle = false;              ///< visit examples in a new random order each epoch
    std::uint64_t seed = 0;            ///< seed of the shuffle; same seed, same orders
    bool drop_last = false;            ///< skip a last batch smaller than batch_size
    std::size_t num_workers = 0;       ///< threads making batches; only 0 (the caller) for now
    std::size_t prefetch_batches = 2;  ///< batches each worker makes ahead (with workers)
};

/// The batches of one epoch, for a range-for loop. Batches are made one at a time as the
/// loop advances. Iterators point into the range, so keep the range alive while
/// iterating (a range-for over loader.epoch(e) does).
class EpochRange {
public:
    /// An input iterator over the batches; compares equal to std::default_sentinel at the end.
    class iterator {
    public:
        using iterator_concept = std::input_iterator_tag;  ///< single pass
        using value_type = Batch;                          ///< what dereferencing yields
        using difference_type = std::ptrdiff_t;            ///< required by the iterator concepts

        /// A past-the-end iterator.
        iterator() = default;
        /// The current batch.
        const Batch& operator*() const { return batch_; }
        /// Member access to the current batch.
        const Batch* operator->() const { return &batch_; }
        /// Makes the next batch.
        iterator& operator++();
        /// Makes the next batch (input iterators return nothing from post-increment).
        void operator++(int) { ++*this; }
        /// True once every batch has been visited.
        bool operator==(std::default_sentinel_t) const;
        /// Position of the current batch in the epoch, from 0.
        std::size_t batch_index() const { return pos_; }

    private:
        friend class EpochRange;
        explicit iterator(const EpochRange* range);
        void load();
        const EpochRange* range_ = nullptr;
        std::size_t pos_ = 0;
        Batch batch_;
    };

    /// A range that makes one batch from each index list of @p plan, in order.
    EpochRange(std::shared_ptr<const Dataset> dataset, std::vector<std::vector<std::size_t>> plan);

    /// Makes the first batch and returns an iterator to it.
    iterator begin() const { return iterator(this); }
    /// The end marker.
    std::default_sentinel_t end() const { return {}; }
    /// Number of batches in the epoch.
    std::size_t size() const { return plan_.size(); }
    /// The index list of each batch, in order.
    const std::vector<std::vector<std::size_t>>& plan() const { return plan_; }

private:
    std::shared_ptr<const Dataset> dataset_;
    std::vector<std::vector<std::size_t>> plan_;
};

/// Turns a dataset into batches, one epoch at a time.
class DataLoader {
public:
    /// @param dataset the examples (non-empty)
    /// @param options batch size, shuffling, ...; throws gl::Error for invalid settings
    /// @param sampler the order of each epoch; null means RandomSampler(options.seed) if
    ///        options.shuffle, else SequentialSampler (giving both a sampler and
    ///        shuffle = true is an error: the sampler decides the order)
    DataLoader(std::shared_ptr<const Dataset> dataset, const DataLoaderOptions& options = {},
               std::shared_ptr<const Sampler> sampler = nullptr);

    /// Batches per epoch (the last one may be short unless drop_last).
    std::size_t num_batches() const;
    /// The index lists of the batches of epoch @p epoch (what workers will be handed).
    std::vector<std::vector<std::size_t>> batch_indices(std::uint64_t epoch) const;
    /// The batches of epoch @p epoch; shuffled loaders give each epoch its own order.
    EpochRange epoch(std::uint64_t epoch) const;

    /// The dataset batches are made from.
    const Dataset& dataset() const { return *dataset_; }
    /// The settings given at construction.
    const DataLoaderOptions& options() const { return options_; }
    /// The sampler in use (the one given, or the one the options chose).
    const Sampler& sampler() const { return *sampler_; }

private:
    std::shared_ptr<const Dataset> dataset_;
    DataLoaderOptions options_;
    std::shared_ptr<const Sampler> sampler_;
};

}  // namespace gl
