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
/// Dataset::get_augmented_batch on one list. That split is what lets worker threads
/// (num_workers > 0, prefetcher.hpp) make batches concurrently and ahead of the loop
/// without changing this interface: the loop sees the same batches in the same order
/// with any number of workers, because each sample's augmentation is seeded by
/// (seed, epoch, index) alone. Knows nothing about models or devices.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "data/dataset.hpp"
#include "data/pinned_memory.hpp"
#include "data/prefetcher.hpp"
#include "data/sampler.hpp"

namespace gl {

/// Settings of a DataLoader.
struct DataLoaderOptions {
    std::size_t batch_size = 64;       ///< examples per batch (positive)
    bool shuffle = false;              ///< visit examples in a new random order each epoch
    std::uint64_t seed = 0;            ///< seed of the shuffle and the augmentation; same seed, same batches
    bool drop_last = false;            ///< skip a last batch smaller than batch_size
    /// Threads making batches ahead of the loop; 0 makes each batch on the calling
    /// thread when the loop asks for it. kAutoWorkers: measured by autotune_workers.
    std::size_t num_workers = 0;
    std::size_t prefetch_factor = 2;   ///< batches each worker may make ahead (with workers)
    /// Copy each batch into page-locked memory (on the worker thread) so a device copy
    /// can read it directly (pinned_memory.hpp).
    bool pin_memory = false;
    /// Where pinned batches get their memory; null means default_pinned_provider().
    PinnedMemoryProvider* pinned_provider = nullptr;
    /// With workers, how long the loop waits for one batch before it reports a hung
    /// worker (gl::Error); 0 waits forever.
    std::size_t timeout_ms = 0;
};

/// num_workers = kAutoWorkers asks DataLoader's constructor to pick the count by
/// measurement (autotune_workers), like tf.data's AUTOTUNE.
inline constexpr std::size_t kAutoWorkers = std::numeric_limits<std::size_t>::max();

/// How an epoch makes its batches (derived from DataLoaderOptions by the loader).
struct EpochSettings {
    AugmentSeed seed;                      ///< the run's seed and the epoch number
    std::size_t num_workers = 0;           ///< 0: make batches on the calling thread
    std::size_t capacity = 2;              ///< batches made ahead at most (with workers)
    std::chrono::milliseconds timeout{0};  ///< hung-worker timeout (with workers)
    PinnedMemoryProvider* pin = nullptr;   ///< copy batches into this pinned memory, if set
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
    EpochRange(std::shared_ptr<const Dataset> dataset, std::vector<std::vector<std::size_t>> plan,
               const EpochSettings& settings = {});
    /// Stops and joins the workers, if any (a loop left early included).
    ~EpochRange();
    EpochRange(EpochRange&&) noexcept;             ///< moves the plan (and running workers)
    EpochRange& operator=(EpochRange&&) noexcept;  ///< moves the plan (and running workers)

    /// Starts the workers (if any), makes the first batch and returns an iterator to it.
    iterator begin() const;
    /// The end marker.
    std::default_sentinel_t end() const { return {}; }
    /// Number of batches in the epoch.
    std::size_t size() const { return plan_.size(); }
    /// The index list of each batch, in order.
    const std::vector<std::vector<std::size_t>>& plan() const { return plan_; }
    /// Time the loop spent waiting in begin() and ++ for batches: all of the loading with
    /// no workers, only what prefetching did not hide with workers.
    std::chrono::nanoseconds data_wait() const { return data_wait_; }
    /// The most batches the workers had made ahead at once (0 without workers).
    std::size_t peak_ahead() const;
    /// Workers left behind hung when the epoch was stopped (0 unless a timeout passed).
    std::size_t abandoned_workers() const;
    /// Makes batch @p b on the calling thread (what each worker runs), pinned if asked.
    Batch make_batch(std::size_t b) const;
    /// Stops and joins the workers now (the destructor does it too); for a loop that
    /// leaves early and wants abandoned_workers() before the range goes away.
    void stop() const;

private:
    Batch fetch(std::size_t b) const;
    std::string where() const;
    std::shared_ptr<const Dataset> dataset_;
    std::vector<std::vector<std::size_t>> plan_;
    EpochSettings settings_;
    mutable std::unique_ptr<Prefetcher> prefetcher_;
    mutable std::chrono::nanoseconds data_wait_{0};
};

/// Turns a dataset into batches, one epoch at a time.
class DataLoader {
public:
    /// @param dataset the examples (non-empty)
    /// @param options batch size, shuffling, ...; throws gl::Error for invalid settings.
    ///        num_workers = kAutoWorkers measures the best count now (autotune_workers)
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
    /// With workers, they start at the loop's begin() and stop when the range is destroyed.
    EpochRange epoch(std::uint64_t epoch) const;
    /// The number of worker threads in use (the measured one after kAutoWorkers).
    std::size_t num_workers() const { return options_.num_workers; }
    /// The same loader with @p num_workers workers (for measuring, autotune_workers).
    DataLoader with_workers(std::size_t num_workers) const;

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

/// What autotune_workers measured.
struct WorkerTuning {
    std::size_t best = 0;                    ///< the worker count with the highest throughput
    std::vector<double> batches_per_second;  ///< measured throughput at 0, 1, 2, ... workers
};

/// Measures @p loader's throughput (its first @p batches batches of epoch 0) with 0, 1,
/// 2, ... workers, raising the count while it pays and stopping at the first count more
/// than 10% slower than the best so far, or at @p max_workers; keeps the best count.
WorkerTuning autotune_workers(const DataLoader& loader, std::size_t max_workers, std::size_t batches);

}  // namespace gl
