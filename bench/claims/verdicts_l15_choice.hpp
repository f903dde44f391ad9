// CHOICE-1's model and verdict as pure functions of what claims_l15_choice.cpp measured
// (tests in tests/claims/test_verdicts_l15_choice.cpp feed them made-up measurements).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "verdicts.hpp"

namespace gl::claims {

/// What a GPU step costs beyond its arithmetic, for the model used when no GPU is present.
/// Every figure is a published one, named in `source`; none is fitted to our CPU times.
struct GpuModel {
    std::string name;            ///< the GPU modelled ("NVIDIA H200 SXM")
    double launch_us = 0.0;      ///< host time to launch one kernel (the floor of a tiny kernel)
    double sync_us = 0.0;        ///< one host wait for the device at the end of a step
    double link_gbs = 0.0;       ///< host -> device copy bandwidth from pinned memory, GB/s
    double fp32_tflops = 0.0;    ///< FP32 arithmetic our kernels reach, TFLOP/s
    std::string source;          ///< where each figure comes from
};

/// The H200 figures the model uses, with their sources.
GpuModel h200_model();

/// What one training step does, counted on the CPU runtime's device (cuda_cpu), which runs
/// the same kernels a GPU would: kernel launches, bytes copied to the device, and the
/// step's multiply-adds (2 FLOPs each).
struct StepCounts {
    double kernels = 0.0;
    double bytes_to_device = 0.0;
    double flops = 0.0;
};

/// The modelled GPU step time in seconds: each launch's latency, the batch's copy over the
/// link, the arithmetic at the model's rate, and one sync (the step's end). Launches and
/// copies are summed, not overlapped: an upper bound for a loop that queues ahead.
double modeled_gpu_seconds(const GpuModel& gpu, const StepCounts& step);

/// One size: an MLP of hidden width `width` (input width too) on a batch of `batch`.
struct ChoicePoint {
    std::int64_t width = 0;
    std::int64_t batch = 0;
    double cpu_seconds = 0.0;    ///< measured: median step time on the CPU
    double gpu_seconds = 0.0;    ///< measured on a GPU, or modeled_gpu_seconds() without one
};

/// CHOICE-1's measurements: points of one batch size in order of growing width (or
/// several batches, each run in order of width); whether the GPU times were measured.
struct Choice1Measured {
    std::vector<ChoicePoint> points;
    bool gpu_measured = false;
    std::string gpu;             ///< the GPU measured, or the model's name and why no GPU
};

/// The index of the first point from which the GPU is faster at that point and at every
/// later one of the same batch, or nothing when the CPU is faster at the last point.
std::optional<std::size_t> crossover(const std::vector<ChoicePoint>& points, std::int64_t batch);

/// Reproduced when, for every batch measured, the CPU is faster at the smallest width and
/// the GPU at the largest (a crossover inside the range). With modelled GPU times the
/// verdict is NeedsGpu whatever the model says; the predicted crossover is in the reason.
Judgement judge_choice1(const Choice1Measured& m);

}  // namespace gl::claims
