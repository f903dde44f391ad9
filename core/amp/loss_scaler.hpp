/// @file
/// @brief Dynamic loss scaling, with the semantics of torch.cuda.amp.GradScaler.
///
/// Owns: the loss scale and its schedule. Gradients smaller than FP16's smallest
/// subnormal (2^-24) become zero when a backward pass runs in FP16. Multiplying the loss
/// by a large scale S multiplies every gradient by S (the chain rule is linear), lifting
/// them into FP16's range; the FP32 master gradients are divided by S again before the
/// optimizer sees them. Too large an S overflows to inf: then the step is skipped and S
/// halved. After a run of good steps S is doubled again, so it hovers near the largest
/// value that does not overflow. Knows nothing about models or optimizers.
#pragma once

#include <cstdint>
#include <vector>

#include "tensor/tensor.hpp"

namespace gl::amp {

/// Settings of a DynamicLossScaler (GradScaler's defaults).
struct LossScalerOptions {
    double init_scale = 65536.0;   ///< the first scale, 2^16
    double growth_factor = 2.0;    ///< scale *= this after growth_interval good steps in a row
    double backoff_factor = 0.5;   ///< scale *= this after a step with inf/NaN gradients
    std::int64_t growth_interval = 2000;  ///< good steps in a row before the scale grows
    bool enabled = true;           ///< false: scale 1, never skip (plain training)
};

/// Everything a scaler needs to resume exactly where it was (for checkpoints).
struct LossScalerState {
    double scale = 65536.0;            ///< the current scale
    std::int64_t growth_tracker = 0;   ///< good steps in a row since the last change
    std::int64_t skipped_steps = 0;    ///< steps skipped so far (for reports)
    /// States compare equal when every field does.
    bool operator==(const LossScalerState&) const = default;
};

/// GradScaler: scale(loss).backward(); unscale_(master gradients) tells whether to skip
/// the step; update(found_inf) adjusts the scale.
class DynamicLossScaler {
public:
    /// A scaler with @p options; throws gl::Error for factors or intervals out of range.
    explicit DynamicLossScaler(LossScalerOptions options = {});

    /// loss * scale (differentiable), or @p loss itself when disabled.
    Tensor scale(const Tensor& loss) const;
    /// Divides every defined gradient in @p grads (float32, contiguous) by the scale, in
    /// place, and returns true when any element is inf or NaN (the step must be skipped).
    /// A disabled scaler leaves the gradients alone and returns false.
    bool unscale_(const std::vector<Tensor>& grads) const;
    /// After a step: back off (and count a skipped step) when @p found_inf, otherwise count
    /// a good step and grow the scale after growth_interval of them in a row.
    void update(bool found_inf);

    /// The current scale (1 when disabled).
    double scale_value() const { return options_.enabled ? state_.scale : 1.0; }
    /// Whether scaling is on.
    bool enabled() const { return options_.enabled; }
    /// The settings.
    const LossScalerOptions& options() const { return options_; }
    /// A copy of the state, for a checkpoint.
    LossScalerState state() const { return state_; }
    /// Restores a state saved with state(); throws gl::Error for a non-positive scale.
    void load_state(const LossScalerState& state);

private:
    LossScalerOptions options_;
    LossScalerState state_;
};

}  // namespace gl::amp
