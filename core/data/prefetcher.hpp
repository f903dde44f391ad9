/// @file
/// @brief Worker threads that make an epoch's batches ahead of the training loop.
///
/// Owns: the bounded queue of ready batches between the workers and the loop, the order
/// batches are handed out in, stopping and joining the workers, carrying a worker's
/// exception to the loop, and noticing a hung worker. Knows nothing about datasets or
/// samplers: a batch is whatever make_batch(b) returns (dataloader.hpp supplies it).
///
/// Why threads and not processes, as PyTorch uses: Python's global interpreter lock lets
/// one thread run Python at a time, so PyTorch needs processes for parallel decoding. C++
/// has no such lock; threads share the dataset and hand batches over without copying
/// them between address spaces. What processes would still buy is isolation: a decoder
/// that crashes (a segfault on a malicious JPEG) takes down its worker process, not the
/// training run.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "data/dataset.hpp"

namespace gl {

/// Makes batch number b (0-based) of an epoch; called from the worker threads at once.
using MakeBatch = std::function<Batch(std::size_t b)>;

/// Settings of a Prefetcher.
struct PrefetchOptions {
    std::size_t num_workers = 1;  ///< worker threads (positive)
    /// Batches made ahead at most: claimed by a worker or ready, but not yet handed to the
    /// loop (positive). The loader passes num_workers * prefetch_factor.
    std::size_t capacity = 2;
    /// How long next() waits for one batch before it reports a hung worker; 0 waits forever.
    std::chrono::milliseconds timeout{0};
};

/// Runs make_batch(0), make_batch(1), ... on worker threads and hands the results to
/// next() in that order, whatever order the workers finish in.
///
/// Workers take batch numbers in increasing order, but never more than
/// options.capacity ahead of the batch the loop is waiting for, so memory stays bounded
/// and the batch the loop needs next is always being made. Destroying the prefetcher
/// (the end of the epoch, a break, an exception in the loop) stops the workers: they
/// finish the batch they hold and exit, and are joined.
class Prefetcher {
public:
    /// Starts the workers on the @p num_batches batches of an epoch.
    Prefetcher(MakeBatch make_batch, std::size_t num_batches, const PrefetchOptions& options);
    /// Stops and joins the workers (see stop()).
    ~Prefetcher();
    Prefetcher(const Prefetcher&) = delete;
    Prefetcher& operator=(const Prefetcher&) = delete;

    /// The next batch in order, waiting for a worker to finish it. Throws gl::Error
    /// "batch B: original message" if make_batch threw for it; throws gl::Error naming
    /// the batch if no batch arrives within options.timeout (a hung worker); throws if
    /// every batch was handed out already.
    Batch next();
    /// Tells the workers to stop after the batch each is making, and waits for them
    /// (forever when options.timeout is 0; else at most that long, then leaves the hung
    /// ones behind: they own what they use, so they can finish safely later). Idempotent.
    void stop();

    /// Batches handed out so far.
    std::size_t delivered() const;
    /// The most batches that were ever claimed or ready but not yet handed out.
    std::size_t peak_ahead() const;
    /// Total time next() spent waiting for a batch: the loop's wait for data.
    std::chrono::nanoseconds waited() const;
    /// Workers that did not exit within the timeout when stopped (left behind).
    std::size_t abandoned_workers() const { return abandoned_; }

private:
    /// A batch as a worker leaves it: made, or the exception that stopped it.
    struct Result {
        Batch batch;
        std::exception_ptr error;
    };
    /// Everything the workers and the loop share; a worker keeps it alive while it runs.
    struct State {
        MakeBatch make_batch;
        std::size_t num_batches = 0;
        PrefetchOptions options;
        mutable std::mutex mutex;
        std::condition_variable batch_ready;   ///< a worker finished a batch (or exited)
        std::condition_variable space_freed;   ///< the loop took a batch, or stop was asked
        std::map<std::size_t, Result> ready;   ///< finished, not yet handed out, by number
        std::size_t next_to_claim = 0;         ///< the next batch number a worker takes
        std::size_t next_to_deliver = 0;       ///< the batch number next() hands out next
        std::size_t peak_ahead = 0;
        std::size_t running = 0;               ///< workers that have not exited
        bool stopping = false;
        std::chrono::nanoseconds waited{0};
    };
    static void work(const std::shared_ptr<State>& state);
    static Result make_one(State& state, std::size_t b);

    std::shared_ptr<State> state_;
    std::vector<std::thread> workers_;
    std::size_t abandoned_ = 0;
};

}  // namespace gl
