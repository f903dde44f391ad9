/// @file
/// @brief FP32 master weights behind 16-bit working copies (mixed-precision training).
///
/// Owns: the pairing of each model parameter (turned into a float16/bfloat16 working
/// copy, which the forward and backward use) with an FP32 master copy (which the
/// optimizer updates). Why: an update smaller than half a unit in the last place of the
/// weight rounds away when added to a 16-bit weight (FP16 has 11 significant bits, so
/// w + u == w once |u| < |w| / 2048), while an FP32 master keeps it and the working copy
/// moves once the updates have added up. Knows nothing about data or models beyond
/// their parameter tensors.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "amp/loss_scaler.hpp"
#include "optim/optimizer.hpp"
#include "tensor/tensor.hpp"

namespace gl::amp {

/// What the last updates did, counted over elements whose gradient was nonzero.
struct UpdateStats {
    std::int64_t updated = 0;   ///< elements that received a nonzero gradient
    std::int64_t vanished = 0;  ///< of those, elements whose stored weight did not change
};

/// The 16-bit working copies of a model's parameters and their FP32 masters.
class MasterWeights {
public:
    /// Turns each of @p params (float32 model parameters) into a @p working_dtype
    /// (Float16 or BFloat16) working copy in place (Tensor::set_data) and keeps an FP32
    /// master of each. With @p keep_master false the masters are rounded to the working
    /// type after every step: the weights are then effectively stored in 16 bits (the
    /// update arithmetic and optimizer state stay FP32), which is what --no-master-weights
    /// measures.
    MasterWeights(std::vector<Tensor> params, DType working_dtype, bool keep_master = true);

    /// The FP32 masters (leaves that require grad): build the optimizer over these.
    const std::vector<Tensor>& masters() const { return masters_; }
    /// The working copies (the model's own parameter tensors, now 16-bit).
    const std::vector<Tensor>& working() const { return working_; }
    /// The working copies' type.
    DType working_dtype() const { return dtype_; }
    /// Whether the masters keep FP32 precision between steps.
    bool keeps_master() const { return keep_master_; }

    /// One update after backward: hands the working copies' gradients to the masters
    /// (widened to FP32 and unscaled by @p scaler), steps @p optimizer unless a gradient
    /// is inf/NaN, and refreshes the working copies from the masters. Returns whether the
    /// optimizer stepped (false: the step was skipped). Does not call scaler.update().
    bool step(optim::Optimizer& optimizer, const DynamicLossScaler& scaler);
    /// Clears the working copies' and the masters' gradients.
    void zero_grad();

    /// Starts (or stops) counting vanished updates in step() and resets the counts;
    /// counting copies the masters each step, so it is off by default.
    void collect_stats(bool on) {
        collect_stats_ = on;
        stats_ = {};
    }
    /// Whether counting is on.
    bool stats_wanted() const { return collect_stats_; }
    /// Counts since collect_stats(true) was last called.
    const UpdateStats& stats() const { return stats_; }

private:
    bool apply_update(optim::Optimizer& optimizer, const DynamicLossScaler& scaler);

    std::vector<Tensor> working_;
    std::vector<Tensor> masters_;
    DType dtype_;
    bool keep_master_;
    bool collect_stats_ = false;
    UpdateStats stats_;
};

/// The 16-bit type of @p params if any of them is float16/bfloat16 (a model after
/// MasterWeights made working copies of it), otherwise nullopt.
std::optional<DType> low_precision_dtype(const std::vector<Tensor>& params);

}  // namespace gl::amp
