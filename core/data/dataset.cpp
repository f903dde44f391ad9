#include "data/dataset.hpp"

#include <algorithm>
#include <cstring>

#include "parallel/thread_pool.hpp"

namespace gl {

void check_batch_indices(const std::vector<std::size_t>& indices, std::size_t size, std::string_view who) {
    check(!indices.empty(), [&] { return std::string(who) + ": the index list is empty; a batch needs at least one example"; });
    for (std::size_t i = 0; i < indices.size(); ++i)
        check(indices[i] < size, [&] {
            return std::string(who) + ": index " + std::to_string(indices[i]) + " (position " + std::to_string(i) +
                   " in the list) is out of range for a dataset of " + std::to_string(size) + " examples";
        });
}

Rng sample_rng(const AugmentSeed& seed, std::size_t index) {
    // Three draws chain the numbers through SplitMix64 (inside Rng's seeding), so nearby
    // (epoch, index) pairs get unrelated streams: (e, i + 1) is not (e + 1, i).
    const std::uint64_t run = Rng(seed.seed).next_u64();
    const std::uint64_t epoch = Rng(run ^ seed.epoch).next_u64();
    return Rng(epoch ^ static_cast<std::uint64_t>(index));
}

namespace {

/// Stacks examples of one shape into a batch (inputs [B, shape...], targets [B]).
Batch stack_examples(const std::vector<Example>& examples, const Shape& shape) {
    Shape batch_shape{static_cast<std::int64_t>(examples.size())};
    batch_shape.insert(batch_shape.end(), shape.begin(), shape.end());
    Batch batch{empty(batch_shape, DType::Float32), empty({static_cast<std::int64_t>(examples.size())}, DType::Int32)};
    const auto row = static_cast<std::size_t>(numel_of(shape));
    float* dst = batch.inputs.data<float>();
    std::int32_t* dst_t = batch.targets.data<std::int32_t>();
    for (std::size_t i = 0; i < examples.size(); ++i) {
        const Tensor input = examples[i].input.contiguous();
        if (row) std::memcpy(dst + i * row, input.data<float>(), row * sizeof(float));
        dst_t[i] = examples[i].target;
    }
    return batch;
}

/// Example @p index of @p data, or the error "sample I: what went wrong".
std::optional<Example> checked_example(const ExampleDataset& data, std::size_t index, const AugmentSeed& seed) {
    std::optional<Example> example;
    try {
        Rng rng = sample_rng(seed, index);
        example = data.get_example(index, rng);
    } catch (const std::exception& e) {
        throw Error("sample " + std::to_string(index) + ": " + e.what());
    }
    if (!example) return example;
    const Tensor& input = example->input;
    check(input.defined() && input.dtype() == DType::Float32 && input.shape() == data.example_shape(), [&] {
        return "sample " + std::to_string(index) + ": the dataset made an input of " +
               (input.defined() ? name_of(input.dtype()) + " " + shape_str(input.shape()) : std::string("nothing")) +
               " but announced float32 " + shape_str(data.example_shape()) +
               "; add a Resize or CenterCrop so every example has one shape";
    });
    check(example->target >= 0 && example->target < data.num_classes(), [&] {
        return "sample " + std::to_string(index) + ": target " + std::to_string(example->target) + " is out of range";
    });
    return example;
}

}  // namespace

Batch ExampleDataset::get_batch(const std::vector<std::size_t>& indices) const {
    return get_augmented_batch(indices, AugmentSeed{});
}

Batch ExampleDataset::get_augmented_batch(const std::vector<std::size_t>& indices, const AugmentSeed& seed) const {
    check_batch_indices(indices, size(), "ExampleDataset::get_batch");
    std::vector<Example> examples;
    examples.reserve(indices.size());
    for (std::size_t index : indices)
        if (std::optional<Example> example = checked_example(*this, index, seed)) examples.push_back(std::move(*example));
    check(!examples.empty(), [&] {
        return "ExampleDataset: every one of the " + std::to_string(indices.size()) +
               " samples of the batch was skipped (first index " + std::to_string(indices.front()) +
               "); the data set has too many bad files";
    });
    return stack_examples(examples, example_shape());
}

namespace {

void check_target_shape(const Tensor& inputs, const Tensor& targets) {
    const std::string who = "TensorDataset: ";
    check(targets.defined() && targets.dtype() == DType::Int32 && targets.dim() == 1,
          who + "targets must be an int32 tensor of shape [N] (class indices), got " +
              (targets.defined() ? name_of(targets.dtype()) + " " + shape_str(targets.shape())
                                 : std::string("an undefined tensor")));
    check(targets.size(0) == inputs.size(0),
          who + std::to_string(inputs.size(0)) + " inputs but " + std::to_string(targets.size(0)) +
              " targets; there must be one target per example");
}

void check_target_range(const Tensor& targets, std::int64_t num_classes) {
    const std::string who = "TensorDataset: ";
    check(num_classes > 0, who + "num_classes must be positive, got " + std::to_string(num_classes));
    const std::int32_t* t = targets.data<std::int32_t>();
    for (std::int64_t i = 0; i < targets.numel(); ++i)
        check(t[i] >= 0 && t[i] < num_classes, [&] {
            return who + "target " + std::to_string(t[i]) + " at index " + std::to_string(i) + " is out of range 0.." +
                   std::to_string(num_classes - 1);
        });
}

/// A contiguous copy outside autograd (a dataset is data, not part of a graph).
Tensor plain_contiguous(const Tensor& t) {
    check(t.device().kind == DeviceKind::CPU,
          "TensorDataset: tensors must live on the CPU; batches are moved to a device later");
    return t.detach().contiguous();
}

}  // namespace

TensorDataset::TensorDataset(Tensor inputs, Tensor targets, std::int64_t num_classes)
    : num_classes_(num_classes) {
    check(inputs.defined() && inputs.dtype() == DType::Float32 && inputs.dim() >= 1,
          "TensorDataset: inputs must be a float32 tensor of shape [N, features...], got " +
              (inputs.defined() ? name_of(inputs.dtype()) + " " + shape_str(inputs.shape())
                                : std::string("an undefined tensor")));
    check_target_shape(inputs, targets);
    inputs_ = plain_contiguous(inputs);
    targets_ = plain_contiguous(targets);
    check_target_range(targets_, num_classes_);
}

std::size_t TensorDataset::size() const { return static_cast<std::size_t>(inputs_.size(0)); }

Shape TensorDataset::example_shape() const {
    return Shape(inputs_.shape().begin() + 1, inputs_.shape().end());
}

Batch TensorDataset::get_batch(const std::vector<std::size_t>& indices) const {
    check_batch_indices(indices, size(), "TensorDataset::get_batch");
    const Shape example = example_shape();
    Shape batch_shape{static_cast<std::int64_t>(indices.size())};
    batch_shape.insert(batch_shape.end(), example.begin(), example.end());

    Batch batch{empty(batch_shape, DType::Float32),
                empty({static_cast<std::int64_t>(indices.size())}, DType::Int32)};
    // Rows are contiguous, so gathering an example is one memcpy of its features.
    const auto row = static_cast<std::size_t>(numel_of(example));
    const float* src = inputs_.data<float>();
    float* dst = batch.inputs.data<float>();
    const std::int32_t* src_t = targets_.data<std::int32_t>();
    std::int32_t* dst_t = batch.targets.data<std::int32_t>();
    const auto gather = [&](std::int64_t first, std::int64_t last) {
        for (auto i = static_cast<std::size_t>(first); i < static_cast<std::size_t>(last); ++i) {
            if (row) std::memcpy(dst + i * row, src + indices[i] * row, row * sizeof(float));
            dst_t[i] = src_t[indices[i]];
        }
    };
    // Shuffled rows of a data set far larger than the caches: every row starts with a miss
    // to memory, and one thread copies them at a fraction of the memory's bandwidth (it waits
    // on latency, not bytes). The intra-op threads copy rows side by side, which keeps more
    // misses in flight: a SimpleNet epoch on 2 CPUs (Zen 4) 9% faster, alternating runs. Below
    // kMinBytesPerThread a share is not worth a thread's hand-off. (In a loader worker the
    // region runs on the worker alone.)
    constexpr std::size_t kMinBytesPerThread = 32 << 10;
    const std::size_t row_bytes = std::max<std::size_t>(1, row * sizeof(float));
    const auto rows_per_thread = static_cast<std::int64_t>(kMinBytesPerThread / row_bytes + 1);
    parallel_for(static_cast<std::int64_t>(indices.size()), rows_per_thread, gather);
    return batch;
}

SubsetDataset::SubsetDataset(std::shared_ptr<const Dataset> base, std::vector<std::size_t> indices)
    : base_(std::move(base)), indices_(std::move(indices)) {
    check(base_ != nullptr, "SubsetDataset: the base dataset is null");
    for (std::size_t i = 0; i < indices_.size(); ++i)
        check(indices_[i] < base_->size(), [&] {
            return "SubsetDataset: index " + std::to_string(indices_[i]) + " (position " + std::to_string(i) +
                   ") is out of range for a base dataset of " + std::to_string(base_->size()) + " examples";
        });
}

std::shared_ptr<SubsetDataset> SubsetDataset::first(std::shared_ptr<const Dataset> base,
                                                    std::size_t n) {
    check(base != nullptr, "SubsetDataset::first: the base dataset is null");
    check(n <= base->size(), "SubsetDataset::first: asked for the first " + std::to_string(n) +
                                 " examples of a dataset of " + std::to_string(base->size()));
    std::vector<std::size_t> indices(n);
    for (std::size_t i = 0; i < n; ++i) indices[i] = i;
    return std::make_shared<SubsetDataset>(std::move(base), std::move(indices));
}

Batch SubsetDataset::get_batch(const std::vector<std::size_t>& indices) const {
    check_batch_indices(indices, size(), "SubsetDataset::get_batch");
    std::vector<std::size_t> mapped(indices.size());
    for (std::size_t i = 0; i < indices.size(); ++i) mapped[i] = indices_[indices[i]];
    return base_->get_batch(mapped);
}

}  // namespace gl
