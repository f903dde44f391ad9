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

}  // namespace gl
