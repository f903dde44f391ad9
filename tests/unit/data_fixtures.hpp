/// @file
/// @brief Test support: small datasets for the data loader's worker tests (an augmented
/// one, one that fails on a chosen sample, one that hangs on it until released).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <future>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "data/dataloader.hpp"

namespace gl::test {

/// n examples of 3 floats: (index, a random number drawn from the sample's generator,
/// another). Target index % 2. Sample `fail_at` throws "decoder exploded on <index>";
/// sample `hang_at` blocks until release() (counting calls that returned).
class AugmentedCounter : public ExampleDataset {
public:
    static constexpr std::size_t kNone = static_cast<std::size_t>(-1);
    explicit AugmentedCounter(std::size_t n, std::size_t fail_at = kNone, std::size_t hang_at = kNone)
        : n_(n), fail_at_(fail_at), hang_at_(hang_at) {}
    std::size_t size() const override { return n_; }
    Shape example_shape() const override { return {3}; }
    std::int64_t num_classes() const override { return 2; }
    std::optional<Example> get_example(std::size_t index, Rng& rng) const override {
        if (delay_us_ > 0) {
            // Scrambles the order workers finish in: samples take 0..4 delay units.
            std::this_thread::sleep_for(std::chrono::microseconds(delay_us_ * ((index * 7919) % 5)));
        }
        if (index == fail_at_) throw Error("decoder exploded on " + std::to_string(index));
        if (index == hang_at_) {
            std::unique_lock lock(mutex_);
            released_cv_.wait(lock, [&] { return released_; });
            ++hangs_returned_;
        }
        ++made_;
        Tensor input = empty({3});
        input.data<float>()[0] = static_cast<float>(index);
        input.data<float>()[1] = static_cast<float>(rng.uniform());
        input.data<float>()[2] = static_cast<float>(rng.uniform());
        return Example{input, static_cast<std::int32_t>(index % 2)};
    }
    /// Makes sample i sleep ((i * 7919) % 5) x @p us microseconds, so workers finish out of order.
    void set_delay_us(int us) { delay_us_ = us; }
    /// Lets a hung sample return.
    void release() const {
        std::lock_guard lock(mutex_);
        released_ = true;
        released_cv_.notify_all();
    }
    /// Examples made so far.
    std::size_t made() const { return made_.load(); }
    /// Hung calls that have returned.
    std::size_t hangs_returned() const { return hangs_returned_.load(); }

private:
    std::size_t n_, fail_at_, hang_at_;
    int delay_us_ = 0;
    mutable std::mutex mutex_;
    mutable std::condition_variable released_cv_;
    mutable bool released_ = false;
    mutable std::atomic<std::size_t> made_{0}, hangs_returned_{0};
};

/// Runs @p fn on its own thread and says whether it returned within @p limit (a deadlock
/// becomes a failed check instead of a hung test; the stuck thread is left behind).
template <class Fn>
bool finishes_within(std::chrono::milliseconds limit, Fn fn) {
    auto done = std::make_shared<std::promise<void>>();
    std::future<void> finished = done->get_future();
    std::thread([fn = std::move(fn), done]() mutable {
        fn();
        done->set_value();
    }).detach();
    return finished.wait_for(limit) == std::future_status::ready;
}

/// Runs @p fn on its own thread and returns its result, or std::nullopt if it did not
/// return within @p limit (the stuck thread is left behind, so @p fn must own everything
/// it uses). An exception from @p fn is rethrown here.
template <class T, class Fn>
std::optional<T> run_within(std::chrono::milliseconds limit, Fn fn) {
    auto result = std::make_shared<std::promise<T>>();
    std::future<T> future = result->get_future();
    std::thread([fn = std::move(fn), result]() mutable {
        try {
            result->set_value(fn());
        } catch (...) {
            result->set_exception(std::current_exception());
        }
    }).detach();
    if (future.wait_for(limit) != std::future_status::ready) return std::nullopt;
    return future.get();
}

/// The first input value of each row of each batch of epoch @p epoch: for AugmentedCounter,
/// the sample indices in the order the loop saw them.
inline std::vector<std::size_t> sample_order(const DataLoader& loader, std::uint64_t epoch) {
    std::vector<std::size_t> order;
    for (const Batch& batch : loader.epoch(epoch))
        for (std::int64_t r = 0; r < batch.inputs.size(0); ++r)
            order.push_back(static_cast<std::size_t>(batch.inputs.at({r, 0})));
    return order;
}

/// Every batch of epoch @p epoch as flat input values, in order.
inline std::vector<std::vector<float>> all_batches(const DataLoader& loader, std::uint64_t epoch) {
    std::vector<std::vector<float>> out;
    for (const Batch& batch : loader.epoch(epoch)) out.push_back(batch.inputs.to_vector<float>());
    return out;
}

}  // namespace gl::test
