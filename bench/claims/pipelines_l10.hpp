// Lab 10's deliberately bad training pipelines (claim PROF-1), each with the lecture's
// remedy: profiled, diagnosed from the profile, and measured before and after. Used by the
// claims report (claims_l10.cpp) and by `gradlab profile --pipeline NAME`.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "profiler/analysis.hpp"
#include "profiler/profiler.hpp"

namespace gl::claims {

/// The planted problems, one pipeline each.
enum class BadPipeline {
    TinyBatch,     ///< SimpleNet at batch 1: every op too small to use the machine
    SlowLoading,   ///< heavy per-example loading work on the training thread (no workers)
    MemoryCap,     ///< the default batch needs more memory than the cap allows
    DataParallel,  ///< DataParallel (a master sends whole models) on a wide model, small batch
    HostSync,      ///< the loss read with .item() every step on a device
};

/// Every pipeline, in the order of the lecture's table.
const std::vector<BadPipeline>& bad_pipelines();
/// "tiny-batch", "slow-loading", "memory-cap", "data-parallel", "host-sync".
std::string pipeline_name(BadPipeline p);
/// The pipeline called @p name; throws gl::Error listing the names otherwise.
BadPipeline parse_pipeline(const std::string& name);
/// The problem planted in @p p (what its diagnosis must name).
prof::Problem planted_problem(BadPipeline p);

/// One profiled run of a pipeline (bad, or with the remedy applied).
struct PipelineRun {
    std::string config;             ///< what ran ("SimpleNet, batch 1, 0 loader workers")
    std::string metric;             ///< what "helps" is measured by ("seconds per sample", ...)
    double value = 0.0;             ///< the metric's value (lower is better for every pipeline)
    double step_seconds = 0.0;      ///< mean step time over the profiled steps
    prof::Trace trace;              ///< the profile
    prof::StepSummary summary;      ///< its summary
    prof::Diagnosis diagnosis;      ///< the automatic diagnosis
    prof::DiagnosisRules rules;     ///< the rules it was diagnosed with (the memory cap)
};

/// Runs @p p (with the lecture's remedy when @p remedied) for a few steps under the
/// profiler and diagnoses the profile. Seconds on two cores.
PipelineRun run_pipeline(BadPipeline p, bool remedied);

}  // namespace gl::claims
