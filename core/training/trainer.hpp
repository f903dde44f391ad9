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
};

/// Progress of an epoch: batches done, batches in all, running mean loss.
using ProgressFn = std::function<void(std::size_t done, std::size_t total, double running_loss)>;

/// Builds an optimizer by name: "sgd" (momentum 0.9) or "adam".
std::unique_ptr<optim::Optimizer> make_optimizer(const std::string& name, std::vector<Tensor> params,
                                                 double lr);

/// Mean loss and accuracy of @p model on @p data, without recording gradients.
EvalResult evaluate(nn::Module& model, const Dataset& data, std::size_t batch_size = 1000);

/// One epoch of the four-step loop over @p loader: forward, loss, backward, update.
EpochReport train_epoch(nn::Module& model, optim::Optimizer& optimizer, const DataLoader& loader,
                        int epoch, const ProgressFn& progress = nullptr);

/// Settings of fit().
struct FitOptions {
    int epochs = 5;                   ///< passes over the training set
    std::size_t batch_size = 64;      ///< examples per step
    double lr = 1e-3;                 ///< learning rate
    std::string optimizer = "adam";   ///< "adam" or "sgd"
    std::uint64_t seed = 0;           ///< shuffling seed (the model has its own)
};

/// Called after each epoch with its report.
using EpochFn = std::function<void(const EpochReport&)>;

/// Trains @p model for options.epochs epochs on @p train (shuffled), evaluating on
/// @p test (may be null) after each epoch.
std::vector<EpochReport> fit(nn::Module& model, const std::shared_ptr<const Dataset>& train,
                             const Dataset* test, const FitOptions& options,
                             const EpochFn& on_epoch = nullptr, const ProgressFn& progress = nullptr);

}  // namespace gl::training
