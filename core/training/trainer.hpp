/// @file
/// @brief The four-step training loop (forward, loss, backward, update) and evaluation.
///
/// Owns: running epochs over a DataLoader and measuring loss, accuracy and throughput.
/// Used by the `train` command, the claims report, the benchmarks and the graded tests,
/// so they all train the same way.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "amp/loss_scaler.hpp"
#include "data/dataloader.hpp"
#include "nn/module.hpp"
#include "optim/optimizer.hpp"

namespace gl::training {

/// Loss and accuracy over a dataset.
struct EvalResult {
    double loss = 0.0;          ///< mean cross-entropy
    double accuracy = 0.0;      ///< fraction classified correctly
    std::int64_t examples = 0;  ///< how many were evaluated
};

/// What one training epoch gave.
struct EpochReport {
    int epoch = 0;                  ///< 1-based epoch number
    double train_loss = 0.0;        ///< mean training loss over the epoch's batches
    double train_accuracy = 0.0;    ///< training accuracy over the epoch (as the model changed)
    EvalResult test;                ///< evaluation after the epoch (empty without a test set)
    double seconds = 0.0;           ///< wall time of the training part of the epoch
    double samples_per_second = 0.0;  ///< training throughput
    std::int64_t skipped_steps = 0;   ///< mixed precision: steps skipped for inf/NaN gradients
    double loss_scale = 1.0;          ///< mixed precision: the loss scale at the end of the epoch
    std::int64_t updates = 0;         ///< counted updates: weight elements with a nonzero gradient
    std::int64_t vanished_updates = 0;  ///< of those, weights that did not change (see amp::UpdateStats)
    std::int64_t steps = 0;             ///< training steps (batches) in the epoch
    /// On a device: times the host waited for it inside the steps (device::transfer_stats);
    /// 0 unless the loss is read every step (or a staging slot's copy was still running when
    /// the host came to refill it). Reading the epoch's loss after the last step is one more,
    /// not counted here.
    std::int64_t host_syncs_in_steps = 0;
    std::int64_t host_to_device_copies = 0;  ///< on a device: copies to it during the steps (2 per batch)
};

/// Where training runs, and whether each step reads its loss (claim DEV-1).
struct DeviceOptions {
    Device device = kCpu;               ///< cpu, cuda or cuda_cpu: model, optimizer state, batches
    bool read_loss_every_step = false;  ///< `.item()` every step: one host sync per step on a device
};

/// Mixed-precision settings (claims FP-2 .. FP-4): which type the matmuls and the
/// working weights use, and whether loss scaling and FP32 master weights are on.
struct PrecisionOptions {
    DType dtype = DType::Float32;   ///< Float32 (plain training), Float16 or BFloat16
    bool loss_scaling = true;       ///< 16-bit: dynamic loss scaling (GradScaler)
    bool master_weights = true;     ///< 16-bit: FP32 master weights (else weights stay 16-bit)
    amp::LossScalerOptions scaler;  ///< the scaler's settings (enabled follows loss_scaling)
    bool count_vanished_updates = false;  ///< fill EpochReport::updates / vanished_updates (slower)
};

/// "fp32", "fp16" or "bf16" as a DType; throws gl::Error for anything else.
DType parse_precision(const std::string& name);

/// After each training step: the step number in the epoch, whether the optimizer
/// stepped, and the loss scale used for that step.
struct StepInfo {
    std::size_t batch = 0;     ///< 0-based batch index in the epoch
    bool stepped = true;       ///< false when mixed precision skipped the step
    double loss_scale = 1.0;   ///< the scale the loss was multiplied by
    double next_loss_scale = 1.0;  ///< the scale the next step will use
};
/// Called after every mixed-precision training step (fit() with 16-bit precision).
using StepFn = std::function<void(const StepInfo&)>;

/// Progress of an epoch: batches done, batches in all, running mean loss.
using ProgressFn = std::function<void(std::size_t done, std::size_t total, double running_loss)>;

/// Builds an optimizer by name: "sgd" (momentum 0.9) or "adam".
std::unique_ptr<optim::Optimizer> make_optimizer(const std::string& name, std::vector<Tensor> params,
                                                 double lr);

/// Mean loss and accuracy of @p model on @p data, without recording gradients. A model
/// with 16-bit working weights is evaluated under autocast to their type. Throws gl::Error
/// when @p data is empty or @p batch_size is 0.
EvalResult evaluate(nn::Module& model, const Dataset& data, std::size_t batch_size = 1000);

/// One epoch of the four-step loop over @p loader: forward, loss, backward, update.
/// On a device (@p where), each batch is copied there once, from pinned staging memory on a
/// copy stream, queued before the previous step's kernels so the two overlap
/// (device::BatchUploader); the loss and the correct predictions are summed there, and they
/// are read once, after the epoch, unless where.read_loss_every_step. The model and the optimizer's state must already be there.
/// @p progress gets NaN for the running loss on a device that does not read it.
EpochReport train_epoch(nn::Module& model, optim::Optimizer& optimizer, const DataLoader& loader,
                        int epoch, const ProgressFn& progress = nullptr, const DeviceOptions& where = {});

/// Settings of fit().
struct FitOptions {
    int epochs = 5;                   ///< passes over the training set
    std::size_t batch_size = 64;      ///< examples per step
    double lr = 1e-3;                 ///< learning rate
    std::string optimizer = "adam";   ///< "adam" or "sgd"
    std::uint64_t seed = 0;           ///< shuffling seed (the model has its own)
    PrecisionOptions precision;       ///< FP32, or mixed precision with FP16/BF16
    StepFn on_step;                   ///< optional, called after every step
    /// Where to train (fp32 only on a device). On a device each batch is staged in the device
    /// runtime's page-locked memory (device::pinned_host_memory) and copied on a copy stream.
    DeviceOptions device;
};

/// Called after each epoch with its report.
using EpochFn = std::function<void(const EpochReport&)>;

/// Throws gl::Error, saying what to change, when fit() could not run @p options on
/// @p train and @p test (may be null): an empty training or test set (a test accuracy
/// of nothing is no accuracy), test examples of another shape or class count than the
/// training examples, fewer than 1 epoch, a batch size of 0, a learning rate that is
/// negative or not finite. fit() calls it first; a program calls it before printing
/// anything, so a bad set-up gives one line of error and no half-started run.
void check_fit(const Dataset* train, const Dataset* test, const FitOptions& options);

/// Trains @p model for options.epochs epochs on @p train (shuffled), evaluating on
/// @p test (may be null) after each epoch. With 16-bit options.precision the model's
/// parameters become 16-bit working copies (amp::MasterWeights) and stay so afterwards.
std::vector<EpochReport> fit(nn::Module& model, const std::shared_ptr<const Dataset>& train,
                             const Dataset* test, const FitOptions& options,
                             const EpochFn& on_epoch = nullptr, const ProgressFn& progress = nullptr);

}  // namespace gl::training
