/// @file
/// @brief Estimating activation memory from a model's layer shapes, without running it.
///
/// Owns: the counting rules (what a framework keeps for backward, layer by layer) and
/// two walks: a Linear-ReLU MLP (checked exactly against the tracking allocator in the
/// CKPT-1 claim) and ResNet-50 (the lecture's "~1.5 GB at batch 32").
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace gl::memory {

/// What a model keeps for backward, per example and in all.
struct ActivationEstimate {
    /// Bytes saved for backward by one example, under the framework rules below.
    double saved_bytes_per_example = 0.0;
    /// Bytes of one output per layer (conv or linear outputs only): the simpler count
    /// often quoted for activation memory.
    double layer_output_bytes_per_example = 0.0;
    std::int64_t parameters = 0;  ///< parameter count of the model walked
    /// One line per stage: "stem: 3.06 MiB/example", for the report.
    std::vector<std::string> stages;
};

/// A Linear-ReLU MLP as nn::make_deep_mlp builds it (@p layers hidden blocks of
/// @p width on @p in features, @p classes outputs) trained with cross-entropy, in
/// float32: matmul keeps its input, ReLU its output (the next matmul's input: the same
/// bytes), cross-entropy its log-probabilities and int32 targets; biases and adds keep
/// nothing.
ActivationEstimate estimate_mlp(std::int64_t layers, std::int64_t width, std::int64_t in, std::int64_t classes);

/// ResNet-50 (torchvision's layout, 224x224 RGB input, 1000 classes) in float32 under
/// PyTorch's eager rules: a convolution keeps its input, batch norm its input (plus two
/// floats per channel), an in-place ReLU its output, max-pooling its input and int64
/// indices, the classifier its input, the loss its log-probabilities; residual adds and
/// the global average pool keep nothing. Not counted: the cuDNN workspace, gradients
/// flowing through backward, and the allocator's rounding and caching.
ActivationEstimate estimate_resnet50();

}  // namespace gl::memory
