// Prefetcher: worker threads, a bounded queue of ready batches, in-order hand-out (lab 06).
#include "data/prefetcher.hpp"

#include <algorithm>
#include <string>
#include <system_error>

#include "base/error.hpp"
#include "parallel/thread_pool.hpp"

namespace gl {

namespace {

using Clock = std::chrono::steady_clock;

/// The message of a captured exception (what() of a std::exception, else a placeholder).
[[maybe_unused]] std::string message_of(const std::exception_ptr& error) {
    try {
        std::rethrow_exception(error);
    } catch (const std::exception& e) {
        return e.what();
    } catch (...) {
        return "an exception that is not a std::exception";
    }
}

[[maybe_unused]] Error hung_worker_error(std::size_t b, std::chrono::milliseconds timeout) {
    return Error("DataLoader: no batch " + std::to_string(b) + " from the workers within " +
                 std::to_string(timeout.count()) + " ms: a worker is hung (a decoder stuck on a file, a lock in "
                 "the dataset) or batches are this slow; fix the dataset or raise DataLoaderOptions::timeout_ms");
}

}  // namespace

Prefetcher::Prefetcher(MakeBatch make_batch, std::size_t num_batches, const PrefetchOptions& options)
    : state_(std::make_shared<State>()) {
    check(options.num_workers > 0, "Prefetcher: num_workers must be positive (use no prefetcher for 0)");
    check(options.capacity > 0, "Prefetcher: the capacity must be at least 1 batch");
    check(static_cast<bool>(make_batch), "Prefetcher: make_batch is empty");
    state_->make_batch = std::move(make_batch);
    state_->num_batches = num_batches;
    state_->options = options;
    state_->running = options.num_workers;
    for (std::size_t w = 0; w < options.num_workers; ++w) {
        try {
            workers_.emplace_back([state = state_] {
                // Free of the CPU its creator may be pinned to, and one thread of work, not a
                // caller of the intra-op pool: the workers run side by side, so each batch's
                // kernels stay on its own worker (see keep_regions_on_this_thread).
                release_inherited_pinning();
                keep_regions_on_this_thread();
                // The thread's entry: whatever escapes the loop (a broken loop, not a failed
                // batch: those travel in their Result) must not end the process.
                try {
                    work(state);
                } catch (...) {
                }
                std::lock_guard lock(state->mutex);
                --state->running;
                state->batch_ready.notify_all();
            });
        } catch (const std::system_error& e) {
            // The system would not start another thread (a process limit): stop the ones
            // that did start, since a constructor that throws runs no destructor.
            {
                std::lock_guard lock(state_->mutex);
                state_->running -= options.num_workers - w;  // those never started
            }
            stop();
            throw Error("DataLoader: could not start worker thread " + std::to_string(w + 1) + " of " +
                        std::to_string(options.num_workers) + " (" + e.what() + "); use fewer workers");
        }
    }
}

Prefetcher::~Prefetcher() {
    try {
        stop();
    } catch (...) {
        // stop() could not ask the workers to stop; leave them behind rather than wait forever.
        for (std::thread& t : workers_)
            if (t.joinable()) t.detach(), ++abandoned_;
    }
}

Prefetcher::Result Prefetcher::make_one(State& s, std::size_t b) {
    // LAB 06 BEGIN: make one batch, keeping its exception for the loop
    // Call s.make_batch(b). If it throws, do not let the exception escape the worker
    // (it would end the program): keep it in the Result (std::current_exception) so
    // next() can hand it to the training loop when the loop reaches batch b.
    Result result;
    try {
        result.batch = s.make_batch(b);
    } catch (...) {
        result.error = std::current_exception();
    }
    return result;
    // LAB 06 END
}

void Prefetcher::work(const std::shared_ptr<State>& state) {
    State& s = *state;
    // LAB 06 BEGIN: a worker's loop: claim a batch number, make it, deliver it
    // Under s.mutex, wait on s.space_freed until the worker should stop (s.stopping, or
    // every batch claimed) or there is room: fewer than s.options.capacity batches
    // claimed but not yet handed out (next_to_claim - next_to_deliver). Claim
    // s.next_to_claim (and record s.peak_ahead), make it *without* the lock (make_one),
    // then put the Result in s.ready under its number and wake the loop (s.batch_ready).
    std::unique_lock lock(s.mutex);
    for (;;) {
        s.space_freed.wait(lock, [&] {
            return s.stopping || s.next_to_claim >= s.num_batches ||
                   s.next_to_claim - s.next_to_deliver < s.options.capacity;
        });
        if (s.stopping || s.next_to_claim >= s.num_batches) return;
        const std::size_t b = s.next_to_claim++;
        s.peak_ahead = std::max(s.peak_ahead, s.next_to_claim - s.next_to_deliver);
        lock.unlock();
        Result result = make_one(s, b);
        lock.lock();
        s.ready.emplace(b, std::move(result));
        s.batch_ready.notify_all();
    }
    // LAB 06 END
}

Batch Prefetcher::next() {
    State& s = *state_;
    std::unique_lock lock(s.mutex);
    check(s.next_to_deliver < s.num_batches,
          [&] { return "Prefetcher: all " + std::to_string(s.num_batches) + " batches of the epoch were handed out already"; });
    // LAB 06 BEGIN: hand out the next batch in order
    // Wait on s.batch_ready until batch b = s.next_to_deliver is in s.ready (or no worker
    // is running any more). With a nonzero s.options.timeout wait at most that long and
    // throw hung_worker_error(b, timeout) when it passes. Add the wait to s.waited. Take
    // the Result out of s.ready, advance next_to_deliver and wake the workers
    // (s.space_freed): a slot is free. Outside the lock, a Result with an error becomes
    // gl::Error("batch B: " + message_of(error)); else return its batch.
    const std::size_t b = s.next_to_deliver;
    const auto arrived = [&] { return s.ready.count(b) > 0 || s.running == 0; };
    const Clock::time_point start = Clock::now();
    if (s.options.timeout.count() == 0) s.batch_ready.wait(lock, arrived);
    else if (!s.batch_ready.wait_for(lock, s.options.timeout, arrived)) throw hung_worker_error(b, s.options.timeout);
    s.waited += Clock::now() - start;
    const auto found = s.ready.find(b);
    check(found != s.ready.end(), [&] { return "DataLoader: the workers stopped before making batch " + std::to_string(b); });
    Result result = std::move(found->second);
    s.ready.erase(found);
    ++s.next_to_deliver;
    s.space_freed.notify_all();
    lock.unlock();
    if (result.error) throw Error("batch " + std::to_string(b) + ": " + message_of(result.error));
    return std::move(result.batch);
    // LAB 06 END
}

void Prefetcher::stop() {
    State& s = *state_;
    {
        std::lock_guard lock(s.mutex);
        // LAB 06 BEGIN: tell the workers to stop
        // Set s.stopping and wake every worker waiting for room (s.space_freed), so each
        // exits after the batch it is making.
        s.stopping = true;
        s.space_freed.notify_all();
        // LAB 06 END
    }
    std::unique_lock lock(s.mutex);
    const auto exited = [&] { return s.running == 0; };
    bool all_exited = true;
    if (s.options.timeout.count() == 0) s.batch_ready.wait(lock, exited);
    else all_exited = s.batch_ready.wait_for(lock, s.options.timeout, exited);
    const std::size_t still_running = s.running;
    lock.unlock();
    for (std::thread& t : workers_) {
        if (!t.joinable()) continue;
        if (all_exited) t.join();
        else t.detach();  // a hung worker: it holds `state`, so it can finish safely later
    }
    if (!all_exited) abandoned_ = still_running;
}

std::size_t Prefetcher::delivered() const {
    std::lock_guard lock(state_->mutex);
    return state_->next_to_deliver;
}

std::size_t Prefetcher::peak_ahead() const {
    std::lock_guard lock(state_->mutex);
    return state_->peak_ahead;
}

std::chrono::nanoseconds Prefetcher::waited() const {
    std::lock_guard lock(state_->mutex);
    return state_->waited;
}

}  // namespace gl
