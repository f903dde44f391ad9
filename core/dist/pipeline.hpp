/// @file
/// @brief Model and pipeline parallelism: a model's layers on different workers,
/// activations sent forward and gradients back, the batch cut into micro-batches so the
/// stages work at the same time (claim MP-2).
///
/// Owns: the schedules (which micro-batch each stage runs forward or backward, in which
/// order), the executor that runs a schedule on one stage over a Communicator, and the
/// timeline and counters it records. Stage s is rank s; it holds consecutive layers of
/// the model (split_stages). Model parallelism is the pipeline with one micro-batch:
/// one stage works at a time.
///
/// Schedules, for p stages and m micro-batches (F i: forward of micro-batch i):
///
/// - **GPipe**: every stage runs F 0..m-1, then B 0..m-1. Simple, but a stage holds the
///   activations of all m micro-batches before its first backward.
/// - **1F1B** (PipeDream-flush, Megatron): stage s runs p-1-s warm-up forwards, then
///   alternates one forward and one backward, then drains the remaining backwards. The
///   same bubble, but at most p-s micro-batches are in flight on stage s.
///
/// Both leave the bubble fraction (p-1)/(m+p-1): the first stage waits p-1 steps at the
/// end for the last micro-batch's gradient, the last waits p-1 at the start.
///
/// Communication: sends are synchronous, so a stage that sends its forward output while
/// its neighbour sends it a gradient would deadlock. The executor defers each send to the
/// next step's receive and does both with one sendrecv (Megatron's
/// send_forward_recv_backward). A stage whose neighbour dies gets a CommError.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "data/dataset.hpp"
#include "dist/communicator.hpp"
#include "nn/module.hpp"

namespace gl::dist {

/// One step of a stage's schedule: forward or backward of one micro-batch.
struct PipeStep {
    char op = 'F';         ///< 'F' forward or 'B' backward
    int micro_batch = 0;   ///< 0..m-1
    /// Same op on the same micro-batch.
    bool operator==(const PipeStep&) const = default;
};

/// The schedules by name: "gpipe", "1f1b".
enum class PipeSchedule { GPipe, OneFOneB };
/// "gpipe" or "1f1b".
std::string to_string(PipeSchedule s);
/// Parses the names to_string() gives; throws gl::Error listing them otherwise.
PipeSchedule parse_pipe_schedule(const std::string& name);

/// GPipe's order on stage @p stage of @p stages with @p micro_batches: F 0..m-1, B 0..m-1.
std::vector<PipeStep> gpipe_order(int stages, int micro_batches, int stage);
/// 1F1B's order on stage @p stage (see the file comment).
std::vector<PipeStep> one_f_one_b_order(int stages, int micro_batches, int stage);
/// The order of @p schedule.
std::vector<PipeStep> schedule_order(PipeSchedule schedule, int stages, int micro_batches, int stage);

/// Throws gl::Error unless @p order runs every micro-batch 0..m-1 forward once, in
/// order, and backward once, after its forward and in order.
void check_pipe_order(const std::vector<PipeStep>& order, int micro_batches);
/// The most micro-batches forwarded but not yet backwarded at once in @p order.
int peak_in_flight(const std::vector<PipeStep>& order);

/// One executed step on a stage's clock (seconds since the stage's start).
struct PipeEvent {
    PipeStep step;         ///< what ran
    double start_s = 0.0;  ///< compute began (after its input arrived)
    double end_s = 0.0;    ///< compute ended
};

/// Settings of PipelineStage::step.
struct PipelineOptions {
    PipeSchedule schedule = PipeSchedule::OneFOneB;  ///< the order of the steps
    int micro_batches = 1;                           ///< m (1: plain model parallelism)
    /// When positive, each forward takes at least this long (its compute, then a wait):
    /// a calibrated stand-in for a device of fixed speed, so that the schedule, not the
    /// host's core count or load, decides the timeline. With waits the timeline is the
    /// stand-in device's clock: a step starts when the stage's device is free and its
    /// input is ready (the sender's device time, appended to the input message: 8 more bytes)
    /// and ends max(wait, its compute) later; the host sleeps until then.
    double forward_wait_s = 0.0;
    double backward_wait_s = 0.0;  ///< the same for each backward
};

/// What one pipelined step did on one stage.
struct PipelineStats {
    std::vector<PipeEvent> timeline;     ///< the steps, in the order they ran (host clock; with waits the device's)
    int peak_in_flight = 0;              ///< most micro-batches with stashed activations at once
    std::size_t peak_stashed_bytes = 0;  ///< most bytes of stashed stage inputs and outputs at once
    std::uint64_t bytes_sent = 0;        ///< activation and gradient bytes this stage sent
    double loss = 0.0;                   ///< last stage: mean loss over the global batch
    std::int64_t correct = 0;            ///< last stage: correctly classified examples
};

/// One stage of a pipeline: rank s of @p comm runs @p stage (layers of the model) on
/// activations from rank s-1 and sends its output to rank s+1; the last rank computes the
/// mean cross-entropy. Gradients accumulate into the stage's parameters (zero them, step
/// the optimizer on every stage, as in one process).
class PipelineStage {
public:
    /// @p input_features: the width of the activations this stage receives (stage 0:
    /// the batch's features). @p comm (and @p stage) must outlive this.
    PipelineStage(std::shared_ptr<nn::Module> stage, Communicator& comm, std::int64_t input_features);
    /// Forward and backward of the global @p batch in micro-batches (every stage passes
    /// the same batch: stage 0 reads its inputs, the last stage its targets; at least
    /// micro_batches rows). Gradients equal those of the unsplit model on the batch.
    PipelineStats step(const Batch& batch, const PipelineOptions& options);
    /// The layers this stage holds.
    nn::Module& module() { return *stage_; }

private:
    std::shared_ptr<nn::Module> stage_;
    Communicator& comm_;
    std::int64_t input_features_;
};

/// Cuts @p model (a Sequential; nested Sequentials count as one layer) into @p stages
/// consecutive groups of layers, as equal in count as possible, and returns group
/// @p stage as a Sequential sharing the layers (and parameters) of @p model, which must
/// outlive it.
std::shared_ptr<nn::Sequential> split_stages(const nn::Sequential& model, int stages, int stage);

/// The bubble fraction of a pipelined step from every stage's timeline: 1 - (time the
/// stages computed) / (stages x the step's span from the first start to the last end).
double bubble_fraction(const std::vector<std::vector<PipeEvent>>& timelines);
/// (p-1)/(m+p-1): the idle fraction of a pipeline with balanced stages.
double ideal_bubble_fraction(int stages, int micro_batches);

/// Writes the timelines (one per stage) as JSON for tools/plot_pipeline.py: {"title":
/// ..., "stages": [[{"op": "F", "mb": 0, "start": s, "end": s}, ...], ...]}.
void write_timeline_json(const std::string& path, const std::string& title,
                         const std::vector<std::vector<PipeEvent>>& timelines);

/// Payload bytes stage @p stage sends in one step: its output ([rows, out_features]
/// floats) forward unless it is the last, and its input's gradient ([rows,
/// in_features]) back unless it is the first; independent of the micro-batch count.
std::uint64_t pipeline_bytes_sent(std::int64_t rows, std::int64_t in_features, std::int64_t out_features, int stages,
                                  int stage);

}  // namespace gl::dist
