/// @file
/// @brief Autocast: which ops run in low precision during mixed-precision training.
///
/// Owns: the per-thread autocast setting. The policy (as torch.autocast): matrix
/// multiplies run in float16 or bfloat16 with FP32 accumulation; everything else
/// (softmax, reductions, losses, the optimizer) runs in float32. Only matmul reads this
/// setting, and only in the forward direction: a matmul whose operands are both 16-bit
/// already (as in the backward pass) runs as it is.
///
/// The setting lives with the ops that read it (as torch.autocast's lives in ATen's
/// dispatcher), below amp/; its names stay in gl::amp, with the loss scaler and the
/// master weights that make up mixed-precision training.
#pragma once

#include <optional>

#include "tensor/dtype.hpp"

namespace gl::amp {

/// The type autocast runs matmuls in on this thread, or nullopt when autocast is off.
std::optional<DType> autocast_dtype();

/// Turns autocast on (Float16 or BFloat16) or off (nullopt) for its lifetime, then
/// restores the previous setting (RAII).
class AutocastGuard {
public:
    /// @param dtype Float16, BFloat16, or nullopt to switch autocast off.
    explicit AutocastGuard(std::optional<DType> dtype);
    ~AutocastGuard();
    AutocastGuard(const AutocastGuard&) = delete;
    AutocastGuard& operator=(const AutocastGuard&) = delete;

private:
    std::optional<DType> previous_;
};

}  // namespace gl::amp
