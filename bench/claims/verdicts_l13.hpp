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

// ---- DEPLOY-1 ----------------------------------------------------------------------------

/// What DEPLOY-1 measures: one model's outputs from eager code, from our runtime reading
/// the exported ONNX file (no autograd), and from ONNX Runtime; and the JIT vs AOT costs.
struct Deploy1Measured {
    double eager_vs_aot = 0.0;        ///< max |eager - our runtime on the ONNX file|
    bool ort_ran = false;             ///< ONNX's checker and ONNX Runtime ran
    std::string ort_why_not;          ///< why not, when they did not
    bool checker_ok = false;          ///< onnx.checker accepted the file
    double aot_vs_ort = 0.0;          ///< max |our runtime - ONNX Runtime| (when ort_ran)
    std::int64_t aot_allocations = 0; ///< tensor allocations per batch in our runtime (counted)
    std::int64_t eager_allocations = 0;  ///< tensor allocations per batch in eager code (counted)
    double jit_startup_seconds = 0.0; ///< capture + passes + plan + first batch (needs the model's code)
    double aot_startup_seconds = 0.0; ///< read the ONNX file + plan + first batch (needs only the file)
    double eager_batch_seconds = 0.0; ///< median per batch, eager forward
    double aot_batch_seconds = 0.0;   ///< median per batch, our runtime (steady state)
};

/// Reproduced when our runtime gives eager's outputs within 1e-5 and allocates nothing
/// per batch (eager does), ONNX's checker accepts the file and ONNX Runtime gives our
/// outputs within 1e-5. NotRun when ONNX Runtime is not installed (the rest is still
/// said); NotReproduced when any comparison fails. The times are reported, not judged.
Judgement judge_deploy1(const Deploy1Measured& m);

}  // namespace gl::claims
