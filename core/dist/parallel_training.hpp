/// @file
/// @brief The training loop over several workers: data, tensor or pipeline parallel.
///
/// Owns: running epochs of DataParallel, DistributedDataParallel, tensor-parallel or
/// pipeline-parallel training on every rank of a communicator, with the same meaning of
/// the batch size as one process, so all of them train the same model:
/// options.batch_size is the global batch (DP: split by the master; DDP: batch_size / N
/// per worker, drawn by a DistributedSampler; tensor and pipeline parallel: every rank
/// sees the whole batch, drawn in the same order as one process draws it). Used by the
/// `train --workers N --parallel dp|ddp|tp|pp` command and the claims report.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "dist/communicator.hpp"
#include "dist/ddp.hpp"
#include "dist/pipeline.hpp"
#include "training/trainer.hpp"

namespace gl::dist {

/// Settings of fit_parallel().
struct ParallelFitOptions {
    training::FitOptions fit;        ///< epochs, global batch size, lr, optimizer, seed (float32 only; on_step unused)
    std::string parallel = "ddp";    ///< "dp", "ddp", "tp" (tensor) or "pp" (pipeline)
    DdpOptions ddp;                  ///< bucket size and algorithm (ddp)
    /// pp: the schedule and the micro-batches per global batch (a smaller last batch
    /// takes as many as it has rows).
    PipeSchedule schedule = PipeSchedule::OneFOneB;
    int micro_batches = 4;  ///< pp: micro-batches per batch
};

/// Builds one replica of the model (called once on every rank).
using ModelFactory = std::function<std::shared_ptr<nn::Module>()>;

/// Trains on this rank; call it on every rank of @p comm. Rank 0 evaluates on @p test
/// (may be null) after each epoch and calls @p on_epoch; training loss and accuracy are
/// over the global batch. Returns the epoch reports (test results on rank 0 only).
///
/// tp and pp need a model that is a Sequential: tp one of Linear-ReLU-Linear pairs
/// (tensor_parallel_mlp), pp any layers, cut into comm.size() stages (split_stages).
/// Under pp rank 0 gathers every stage's parameters into its replica to evaluate it.
std::vector<training::EpochReport> fit_parallel(Communicator& comm, const ModelFactory& make_model,
                                                const std::shared_ptr<const Dataset>& train, const Dataset* test,
                                                const ParallelFitOptions& options,
                                                const training::EpochFn& on_epoch = nullptr);

}  // namespace gl::dist
