/// @file
/// @brief Datasets: numbered examples that can be gathered into a batch.
///
/// Owns: the Dataset interface, the Batch it produces, and datasets built from other
/// data (tensors in memory, a subset of another dataset). Knows nothing about file
/// formats (idx.hpp, mnist.hpp) or about the order examples are visited in (sampler.hpp,
/// dataloader.hpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/rng.hpp"
#include "tensor/tensor.hpp"

namespace gl {

/// A batch of examples: what one training step consumes.
struct Batch {
    Tensor inputs;   ///< float32 [B, features...]
    Tensor targets;  ///< int32 [B], class indices
};

/// What makes augmentation random in one epoch: the run's seed and the epoch number.
/// Each sample draws from its own generator, sample_rng(seed, index), so a sample's
/// random crop depends on (seed, epoch, index) only: not on which worker thread makes it,
/// nor on how many there are, nor on the order they finish in.
struct AugmentSeed {
    std::uint64_t seed = 0;   ///< the run's seed (DataLoaderOptions::seed)
    std::uint64_t epoch = 0;  ///< the epoch number
};

/// The generator of sample @p index under @p seed (a hash of seed, epoch and index).
Rng sample_rng(const AugmentSeed& seed, std::size_t index);

/// Numbered examples 0..size()-1 with a class label each.
///
/// get_batch is the unit of work of a data loader: it must be const and safe to call from
/// several threads at once, so that loader workers can make batches concurrently.
class Dataset {
public:
    virtual ~Dataset() = default;
    /// Number of examples.
    virtual std::size_t size() const = 0;
    /// Shape of one example's inputs (a batch's inputs are [B] followed by this).
    virtual Shape example_shape() const = 0;
    /// Number of classes; targets lie in 0..num_classes()-1.
    virtual std::int64_t num_classes() const = 0;
    /// Gathers the examples at @p indices, in that order, into one batch. Throws if the
    /// list is empty or an index is out of range. Thread-safe.
    virtual Batch get_batch(const std::vector<std::size_t>& indices) const = 0;
    /// get_batch for datasets with random augmentation: each sample's randomness comes
    /// from sample_rng(@p seed, index). Datasets without randomness ignore @p seed (the
    /// default). The data loader calls this one. Thread-safe.
    virtual Batch get_augmented_batch(const std::vector<std::size_t>& indices, const AugmentSeed& seed) const {
        (void)seed;
        return get_batch(indices);
    }
};

/// One example as a dataset makes it: the input tensor (the dataset's example_shape())
/// and its class.
struct Example {
    Tensor input;            ///< float32, example_shape()
    std::int32_t target = 0; ///< class index
};

/// A dataset that makes one example at a time (decoding a file, augmenting it) and
/// stacks them into batches. A failing example becomes an error that names its index
/// and keeps the original message; an example the dataset chose to skip (a bad file, on
/// request) leaves the batch one row shorter.
class ExampleDataset : public Dataset {
public:
    /// Example @p index, drawing any randomness from @p rng; std::nullopt skips it.
    /// Throws for a bad example. Thread-safe.
    virtual std::optional<Example> get_example(std::size_t index, Rng& rng) const = 0;
    /// The examples at @p indices with the seed of epoch 0 of seed 0.
    Batch get_batch(const std::vector<std::size_t>& indices) const override;
    /// Makes each example with sample_rng(@p seed, index) and stacks them in order.
    /// Throws gl::Error("sample I: original message") for the first example that fails,
    /// and when every example of the batch was skipped.
    Batch get_augmented_batch(const std::vector<std::size_t>& indices, const AugmentSeed& seed) const override;
};

/// Throws gl::Error unless @p indices is non-empty and every index is below @p size;
/// @p who names the caller in the message (built only when a check fails: this runs
/// for every batch).
void check_batch_indices(const std::vector<std::size_t>& indices, std::size_t size, std::string_view who);

/// A dataset held in memory as two tensors: inputs [N, features...] and targets [N].
class TensorDataset : public Dataset {
public:
    /// @param inputs float32 [N, features...]; copied to contiguous form if it is a view
    /// @param targets int32 [N], each in 0..num_classes-1
    /// @param num_classes number of classes (positive)
    TensorDataset(Tensor inputs, Tensor targets, std::int64_t num_classes);

    /// Number of examples N.
    std::size_t size() const override;
    /// Inputs' shape without the leading N.
    Shape example_shape() const override;
    /// The number of classes given at construction.
    std::int64_t num_classes() const override { return num_classes_; }
    /// Copies the rows at @p indices into new tensors. A batch of more than about 32 KiB
    /// is copied by the intra-op threads (parallel_for), each a run of rows; inside a
    /// parallel region or a loader worker, by the calling thread alone.
    Batch get_batch(const std::vector<std::size_t>& indices) const override;

    /// All inputs, [N, features...].
    const Tensor& inputs() const { return inputs_; }
    /// All targets, [N].
    const Tensor& targets() const { return targets_; }

private:
    Tensor inputs_;
    Tensor targets_;
    std::int64_t num_classes_;
};

/// A view of some examples of another dataset, renumbered 0..n-1 (for quick runs on the
/// first n examples, or a train/validation split).
class SubsetDataset : public Dataset {
public:
    /// Example i of the subset is example @p indices[i] of @p base; every index must be
    /// below base->size(). Repeats are allowed.
    SubsetDataset(std::shared_ptr<const Dataset> base, std::vector<std::size_t> indices);
    /// The first @p n examples of @p base. Throws if @p n exceeds base->size(), so that
    /// asking for more examples than there are never silently trains on fewer.
    static std::shared_ptr<SubsetDataset> first(std::shared_ptr<const Dataset> base, std::size_t n);

    /// Number of examples in the subset.
    std::size_t size() const override { return indices_.size(); }
    /// The base dataset's example shape.
    Shape example_shape() const override { return base_->example_shape(); }
    /// The base dataset's number of classes.
    std::int64_t num_classes() const override { return base_->num_classes(); }
    /// Maps @p indices to the base dataset's and gathers from it.
    Batch get_batch(const std::vector<std::size_t>& indices) const override;

private:
    std::shared_ptr<const Dataset> base_;
    std::vector<std::size_t> indices_;
};

}  // namespace gl
