/// @file
/// @brief DataParallel: one master replica that scatters, gathers and updates (claim DP-1).
///
/// Owns: the master's step, as torch.nn.DataParallel does it within one process, written
/// over a Communicator so that every byte through the master is counted. Rank 0 is the
/// master: it holds the global batch, the model that is trained and the optimizer. Each
/// step it
///
/// 1. copies its parameters to every replica (N-1 sends of the whole model),
/// 2. scatters the batch: rows [ring_chunk] of the inputs and targets to each rank,
/// 3. every rank (the master too) runs forward on its slice; the master gathers the
///    outputs, computes the loss over the global batch and runs its backward to the
///    outputs, then sends each replica the gradient of its slice of the outputs,
/// 4. every rank runs backward through its replica; the master gathers the parameter
///    gradients (N-1 receives of the whole model) and adds them up,
/// 5. the master alone steps the optimizer.
///
/// The master sends and receives 2(N-1) models per step while a DDP worker moves
/// 2(N-1)/N of one, and the replicas wait while the master works: the bottleneck the
/// lecture describes. Knows nothing about data loading.
#pragma once

#include <memory>

#include "data/dataset.hpp"
#include "dist/communicator.hpp"
#include "nn/module.hpp"
#include "optim/optimizer.hpp"

namespace gl::dist {

/// What one DataParallel step gave (on the master; replicas get zeros).
struct DpStepResult {
    double loss = 0.0;            ///< mean cross-entropy over the global batch
    std::int64_t correct = 0;     ///< correctly classified examples of the batch
    std::int64_t examples = 0;    ///< global batch size
};

/// One rank of a DataParallel group: the master (rank 0) or a replica.
class DataParallel {
public:
    /// @p model: the master's model on rank 0, a replica of the same architecture on the
    /// other ranks (its values are overwritten every step). @p comm must outlive this.
    DataParallel(std::shared_ptr<nn::Module> model, Communicator& comm);
    /// One training step. On rank 0, @p batch is the global batch and @p optimizer the
    /// master's (over the master model's parameters); other ranks pass an empty batch
    /// and nullptr. The batch must have at least as many rows as there are ranks.
    DpStepResult step(const Batch& batch, optim::Optimizer* optimizer);
    /// The model this rank holds.
    nn::Module& module() { return *model_; }

private:
    DpStepResult master_step(const Batch& batch, optim::Optimizer& optimizer);
    void replica_step();

    std::shared_ptr<nn::Module> model_;
    std::vector<Tensor> params_;
    Communicator& comm_;
    DType dtype_ = DType::Float32;
    std::size_t flat_count_ = 0;
    std::shared_ptr<void> flat_;
};

}  // namespace gl::dist
