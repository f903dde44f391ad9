#include "amp/loss_scaler.hpp"

#include <cmath>

#include "ops/ops.hpp"

namespace gl::amp {

DynamicLossScaler::DynamicLossScaler(LossScalerOptions options) : options_(options) {
    check(options.init_scale > 0 && std::isfinite(options.init_scale), "loss scaler: init_scale must be a finite number > 0");
    check(options.growth_factor > 1, "loss scaler: growth_factor must be > 1");
    check(options.backoff_factor > 0 && options.backoff_factor < 1, "loss scaler: backoff_factor must be in (0, 1)");
    check(options.growth_interval >= 1, "loss scaler: growth_interval must be at least 1");
    state_.scale = options.init_scale;
}

Tensor DynamicLossScaler::scale(const Tensor& loss) const {
    return options_.enabled ? mul(loss, state_.scale) : loss;
}

bool DynamicLossScaler::unscale_(const std::vector<Tensor>& grads) const {
    if (!options_.enabled) return false;
    for (const Tensor& g : grads)
        if (g.defined())
            check(g.dtype() == DType::Float32 && g.is_contiguous(),
                  "loss scaler: unscale_ expects contiguous float32 (master) gradients, got " + name_of(g.dtype()));
    // LAB 05 BEGIN: unscale the gradients and look for inf/NaN
    // Multiply every element of every defined gradient by 1 / scale, in place (through
    // g.data<float>()), and remember whether any element is not finite (std::isfinite).
    // Check all elements: an inf anywhere means the whole step must be skipped.
    const float inv_scale = static_cast<float>(1.0 / state_.scale);
    bool found_inf = false;
    for (const Tensor& g : grads) {
        if (!g.defined()) continue;
        float* p = g.data<float>();
        for (std::int64_t i = 0; i < g.numel(); ++i) {
            p[i] *= inv_scale;
            found_inf = found_inf || !std::isfinite(p[i]);
        }
    }
    return found_inf;
    // LAB 05 END
}

void DynamicLossScaler::update(bool found_inf) {
    if (!options_.enabled) return;
    // LAB 05 BEGIN: update the loss scale
    // GradScaler's rule. Overflow: multiply the scale by backoff_factor, reset the run of
    // good steps (growth_tracker) and count a skipped step. Otherwise: one more good
    // step; when the run reaches growth_interval, multiply the scale by growth_factor
    // and start a new run.
    if (found_inf) {
        state_.scale *= options_.backoff_factor;
        state_.growth_tracker = 0;
        ++state_.skipped_steps;
    } else if (++state_.growth_tracker == options_.growth_interval) {
        state_.scale *= options_.growth_factor;
        state_.growth_tracker = 0;
    }
    // LAB 05 END
}

void DynamicLossScaler::load_state(const LossScalerState& state) {
    check(state.scale > 0 && std::isfinite(state.scale), "loss scaler: a saved scale must be a finite number > 0");
    check(state.growth_tracker >= 0 && state.skipped_steps >= 0, "loss scaler: saved counters must be >= 0");
    state_ = state;
}

}  // namespace gl::amp
