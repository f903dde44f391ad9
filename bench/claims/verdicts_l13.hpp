// Verdicts of lab 13's claims (static graphs), computed from measurements only.
#pragma once

#include <cstdint>
#include <string>

#include "verdicts.hpp"

namespace gl::claims {

// ---- JIT-1 -------------------------------------------------------------------------------

/// One way of running a training step, as JIT-1 measures it.
struct StepVariant {
    std::string name;                 ///< "eager", "captured", "captured + fused + planned"
    std::int64_t bytes_moved = 0;     ///< bytes the step's kernels read and write (counted)
    std::int64_t kernels = 0;         ///< kernel launches per step
    std::int64_t allocations = 0;     ///< tensor allocations per step (counted)
    std::int64_t peak_bytes = 0;      ///< bytes of temporaries held at once (activations, gradients, scratch)
    double step_seconds = 0.0;        ///< median step time (reported, not judged)
};

/// Reproduced when, against eager: the fused graph moves fewer bytes in fewer kernels,
/// the planned graph's peak is lower and it allocates nothing per step while eager
/// allocates, and the weights after the same steps agree (max |difference| <= 1e-4).
Judgement judge_jit1(const StepVariant& eager, const StepVariant& captured, const StepVariant& optimized,
                     double max_weight_difference);

}  // namespace gl::claims
