/// @file
/// @brief DistributedDataParallel: a model replica per worker, gradients averaged by
/// bucketed all-reduces that start while backward is still running (claims DP-1, DP-3).
///
/// Owns: the reducer. At construction rank 0's parameters are broadcast so every replica
/// starts equal, the parameters are assigned to buckets of about bucket_bytes in reverse
/// registration order (the order backward produces their gradients), and a grad hook is
/// put on each parameter. During backward, each hook copies its gradient into its
/// bucket; a full bucket is handed to a communication thread, which all-reduces and
/// averages it while backward continues with the layers below. Buckets are launched in
/// bucket order on every rank, so the collectives match. When the last gradient has
/// arrived, the hook waits for the outstanding buckets and writes the averages back into
/// the gradients: when backward() returns, every rank has the same averaged gradients
/// and steps its own optimizer, so the replicas stay equal without sending parameters.
///
/// ```cpp
/// DistributedDataParallel ddp(model, comm);
/// Tensor loss = cross_entropy(ddp.forward(x_local), y_local);
/// loss.backward();          // gradients averaged over the workers on return
/// optimizer.step();
/// ```
///
/// Gradient accumulation: backward passes inside `auto guard = ddp.no_sync();` only
/// accumulate locally; the next backward outside it all-reduces the accumulated sum.
/// Knows nothing about data loading.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "dist/communicator.hpp"
#include "nn/module.hpp"

namespace gl::dist {

/// Settings of DistributedDataParallel.
struct DdpOptions {
    std::size_t bucket_bytes = 1 << 20;     ///< target bucket size (PyTorch: 25 MiB)
    AllReduceAlgo algo = AllReduceAlgo::Ring;  ///< how buckets are all-reduced
    bool overlap = true;  ///< all-reduce on a communication thread during backward (false: in the hook)
};

/// Buckets for parameters of @p param_bytes bytes each (in registration order): a list of
/// buckets, each a list of parameter indices. Parameters are taken in reverse order (the
/// last layer's gradients are ready first) and a bucket is closed once it holds at least
/// @p bucket_bytes; a parameter is never split, so a big one makes a bucket of its own.
std::vector<std::vector<std::size_t>> assign_buckets(const std::vector<std::size_t>& param_bytes,
                                                     std::size_t bucket_bytes);

/// What the reducer did, for tests and the claims report.
struct DdpStats {
    std::size_t buckets = 0;                ///< number of buckets
    std::size_t allreduces = 0;             ///< bucket all-reduces launched so far
    std::size_t launched_before_last = 0;   ///< of those, launched before backward's last gradient
    std::size_t synced_backwards = 0;       ///< backward passes that ended with averaged gradients
};

/// Wraps a model for data-parallel training over @p comm (see the file comment).
class DistributedDataParallel {
public:
    /// Broadcasts rank 0's parameters, builds the buckets and installs the grad hooks.
    /// @p comm must outlive this object; @p model's parameters must share one dtype.
    DistributedDataParallel(std::shared_ptr<nn::Module> model, Communicator& comm, DdpOptions options = {});
    ~DistributedDataParallel();
    DistributedDataParallel(const DistributedDataParallel&) = delete;
    DistributedDataParallel& operator=(const DistributedDataParallel&) = delete;

    /// The model's forward; throws if the previous backward left gradients unsynchronised
    /// (a parameter that received no gradient).
    Tensor forward(const Tensor& x);
    /// The wrapped model (its parameters are this rank's replica).
    nn::Module& module() { return *model_; }

    /// Disables gradient synchronisation until the returned guard is destroyed.
    class NoSyncGuard {
    public:
        /// Re-enables synchronisation.
        ~NoSyncGuard();
        NoSyncGuard(const NoSyncGuard&) = delete;
        NoSyncGuard& operator=(const NoSyncGuard&) = delete;

    private:
        friend class DistributedDataParallel;
        explicit NoSyncGuard(DistributedDataParallel& ddp);
        DistributedDataParallel& ddp_;
    };
    /// Backward passes while the guard lives accumulate gradients locally, unsynchronised.
    [[nodiscard]] NoSyncGuard no_sync() { return NoSyncGuard(*this); }

    /// The buckets, as parameter indices (registration order).
    const std::vector<std::vector<std::size_t>>& buckets() const { return bucket_params_; }
    /// Counters of what the reducer did.
    const DdpStats& stats() const { return stats_; }

private:
    struct Bucket;
    class CommThread;
    void on_gradient_ready(std::size_t param, const Tensor& grad);
    void launch_ready_buckets();
    void finish_sync();

    std::shared_ptr<nn::Module> model_;
    std::vector<Tensor> params_;
    Communicator& comm_;
    DdpOptions options_;
    DType dtype_ = DType::Float32;
    std::vector<std::vector<std::size_t>> bucket_params_;
    std::vector<std::unique_ptr<Bucket>> buckets_;
    std::vector<std::size_t> bucket_of_, offset_in_bucket_;  // per parameter
    std::size_t next_to_launch_ = 0;  // buckets are launched in order
    std::size_t gradients_ready_ = 0;  // hooks fired in this backward
    bool sync_enabled_ = true;
    DdpStats stats_;
    std::unique_ptr<CommThread> comm_thread_;
    std::shared_ptr<DistributedDataParallel*> self_;  // the hooks' way back; null once destroyed
};

}  // namespace gl::dist
