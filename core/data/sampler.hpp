/// @file
/// @brief Samplers: the order in which an epoch visits a dataset's examples.
///
/// Owns: turning (dataset size, epoch number) into a list of example indices. A sampler
/// is a pure function of its settings and the epoch, so any epoch can be replayed (after
/// resuming from a checkpoint, or on another worker). Knows nothing about batches or
/// what the examples are.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace gl {

/// Decides which examples an epoch visits, and in what order.
class Sampler {
public:
    virtual ~Sampler() = default;
    /// The example indices of epoch @p epoch of a dataset of @p dataset_size examples,
    /// in visiting order. Each index must be below @p dataset_size.
    virtual std::vector<std::size_t> indices(std::size_t dataset_size, std::uint64_t epoch) const = 0;
    /// How many indices indices() returns for a dataset of @p dataset_size examples
    /// (the same every epoch), so a loader can count batches without drawing an order.
    virtual std::size_t num_indices(std::size_t dataset_size) const = 0;
};

/// Visits 0, 1, ..., n-1 every epoch (for evaluation, where order does not matter).
class SequentialSampler : public Sampler {
public:
    /// 0..dataset_size-1 in order; @p epoch is ignored.
    std::vector<std::size_t> indices(std::size_t dataset_size, std::uint64_t epoch) const override;
    /// @p dataset_size.
    std::size_t num_indices(std::size_t dataset_size) const override { return dataset_size; }
};

/// Visits every example once per epoch in a shuffled order (training, so that batches
/// differ from epoch to epoch). The order depends only on (seed, epoch): each epoch is
/// shuffled differently, and the same seed replays the same sequence of epochs.
class RandomSampler : public Sampler {
public:
    /// @param seed the run's seed; the epoch number is mixed in per epoch
    explicit RandomSampler(std::uint64_t seed = 0) : seed_(seed) {}
    /// A permutation of 0..dataset_size-1 drawn from gl::Rng seeded from (seed, epoch).
    std::vector<std::size_t> indices(std::size_t dataset_size, std::uint64_t epoch) const override;
    /// @p dataset_size.
    std::size_t num_indices(std::size_t dataset_size) const override { return dataset_size; }
    /// The seed given at construction.
    std::uint64_t seed() const { return seed_; }

private:
    std::uint64_t seed_;
};

/// One worker's share of each epoch in data-parallel training (claim DP-4). Every rank
/// draws the same order (shuffled by (seed, epoch) exactly as RandomSampler, or 0..n-1),
/// pads it by repeating its first indices up to a multiple of the number of replicas
/// (or drops the tail with drop_last), and takes every num_replicas-th index starting at
/// its rank. So the ranks get equal shares, disjoint apart from the padding, that
/// together cover every example once per epoch; and batch k of all ranks together is
/// batch k of one process whose batch is num_replicas times larger.
class DistributedSampler : public Sampler {
public:
    /// @param num_replicas workers (positive); @param rank this worker, below num_replicas;
    /// @param shuffle draw a new order each epoch; @param seed the run's seed (the same on
    /// every rank); @param drop_last drop the tail instead of padding.
    DistributedSampler(std::size_t num_replicas, std::size_t rank, bool shuffle = true, std::uint64_t seed = 0,
                       bool drop_last = false);
    /// This rank's indices of epoch @p epoch.
    std::vector<std::size_t> indices(std::size_t dataset_size, std::uint64_t epoch) const override;
    /// ceil(n / num_replicas), or floor with drop_last: the same on every rank.
    std::size_t num_indices(std::size_t dataset_size) const override;
    /// Number of workers.
    std::size_t num_replicas() const { return num_replicas_; }
    /// This worker's rank.
    std::size_t rank() const { return rank_; }

private:
    std::size_t num_replicas_, rank_;
    bool shuffle_;
    std::uint64_t seed_;
    bool drop_last_;
};

}  // namespace gl
