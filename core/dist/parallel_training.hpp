/// @file
/// @brief The training loop over several workers, with DataParallel or DDP.
///
/// Owns: running epochs of DataParallel or DistributedDataParallel training on every rank
/// of a communicator, with the same meaning of the batch size as one process, so the
/// three train the same model: options.batch_size is the global batch (DP: split by the
/// master; DDP: batch_size / N per worker, drawn by a DistributedSampler). Used by the
/// `train --workers N --parallel dp|ddp` command and the claims report.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "dist/communicator.hpp"
#include "dist/ddp.hpp"
#include "training/trainer.hpp"

namespace gl::dist {

/// Settings of fit_parallel().
struct ParallelFitOptions {
    training::FitOptions fit;        ///< epochs, global batch size, lr, optimizer, seed (float32 only; on_step unused)
    std::string parallel = "ddp";    ///< "dp" or "ddp"
    DdpOptions ddp;                  ///< bucket size and algorithm (ddp)
};

/// Builds one replica of the model (called once on every rank).
using ModelFactory = std::function<std::shared_ptr<nn::Module>()>;

/// Trains on this rank; call it on every rank of @p comm. Rank 0 evaluates on @p test
/// (may be null) after each epoch and calls @p on_epoch; training loss and accuracy are
/// over the global batch. Returns the epoch reports (test results on rank 0 only).
std::vector<training::EpochReport> fit_parallel(Communicator& comm, const ModelFactory& make_model,
                                                const std::shared_ptr<const Dataset>& train, const Dataset* test,
                                                const ParallelFitOptions& options,
                                                const training::EpochFn& on_epoch = nullptr);

}  // namespace gl::dist
