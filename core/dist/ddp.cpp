// DistributedDataParallel's reducer: buckets, grad hooks, and the communication thread.
// The bucketing is lab 08's.
#include "dist/ddp.hpp"

#include <condition_variable>
#include <cstring>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>

#include "dist/collectives.hpp"
#include "dist/flat_params.hpp"
#include "parallel/thread_pool.hpp"
#include "profiler/profiler.hpp"

namespace gl::dist {

std::vector<std::vector<std::size_t>> assign_buckets(const std::vector<std::size_t>& param_bytes,
                                                     std::size_t bucket_bytes) {
    // LAB 08 BEGIN: assign parameters to buckets
    // Walk the parameters from the last to the first. Add each to the current bucket;
    // once the bucket holds at least bucket_bytes, close it and start a new one. A last,
    // partly filled bucket is kept. Every parameter ends up in exactly one bucket.
    std::vector<std::vector<std::size_t>> buckets;
    std::vector<std::size_t> current;
    std::size_t filled = 0;
    for (std::size_t i = param_bytes.size(); i-- > 0;) {
        current.push_back(i);
        filled += param_bytes[i];
        if (filled >= bucket_bytes) {
            buckets.push_back(std::move(current));
            current.clear();
            filled = 0;
        }
    }
    if (!current.empty()) buckets.push_back(std::move(current));
    return buckets;
    // LAB 08 END
}

// A bucket: a flat buffer holding the gradients of some parameters, all-reduced at once.
struct DistributedDataParallel::Bucket {
    std::vector<std::size_t> params;  // parameter indices, in the order they fill the buffer
    std::shared_ptr<void> buffer;     // count elements of the model's dtype
    std::size_t count = 0;
    std::size_t ready = 0;            // gradients copied in during this backward
};

// Runs the bucket all-reduces (sums) in order on a thread of its own, so that they
// overlap with the rest of backward (or inline, when overlap is off).
class DistributedDataParallel::CommThread {
public:
    CommThread(Communicator& comm, AllReduceAlgo algo, DType dtype, bool threaded)
        : comm_(comm), algo_(algo), dtype_(dtype) {
        if (threaded)
            thread_ = std::thread([this] {
                release_inherited_pinning();  // not held to the training thread's CPU
                prof::set_thread_name("ddp communication");
                loop();
            });
    }
    ~CommThread() {
        if (!thread_.joinable()) return;
        {
            std::lock_guard lock(m_);
            stop_ = true;
        }
        cv_.notify_all();
        thread_.join();
    }
    void launch(Bucket& b) {
        if (!thread_.joinable()) return reduce(b);
        std::lock_guard lock(m_);
        queue_.push_back(&b);
        cv_.notify_all();
    }
    // Waits until every launched bucket is reduced; rethrows a communication failure.
    void wait_all() {
        // The training thread's time here is communication the backward pass did not hide.
        const prof::Scope scope(prof::Category::Communication, "wait for all-reduce");
        std::unique_lock lock(m_);
        cv_.wait(lock, [&] { return queue_.empty() && !busy_; });
        if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
    }

private:
    void loop() {
        std::unique_lock lock(m_);
        for (;;) {
            cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
            if (stop_) return;
            Bucket* b = queue_.front();
            busy_ = true;
            lock.unlock();
            try {
                if (!error_) reduce(*b);  // after a failure, later buckets are skipped
            } catch (...) {
                error_ = std::current_exception();
            }
            lock.lock();
            queue_.pop_front();
            busy_ = false;
            cv_.notify_all();
        }
    }
    void reduce(Bucket& b) { all_reduce(comm_, b.buffer.get(), b.count, dtype_, algo_); }

    Communicator& comm_;
    AllReduceAlgo algo_;
    DType dtype_;
    std::mutex m_;
    std::condition_variable cv_;
    std::deque<Bucket*> queue_;
    bool busy_ = false, stop_ = false;
    std::exception_ptr error_;
    std::thread thread_;
};

DistributedDataParallel::DistributedDataParallel(std::shared_ptr<nn::Module> model, Communicator& comm,
                                                 DdpOptions options)
    : model_(std::move(model)), comm_(comm), options_(options) {
    check(model_ != nullptr, "DistributedDataParallel: the model is null");
    check(!comm_.memory_is_device(), "DistributedDataParallel: the " + comm_.backend() +
                                         " backend works on GPU buffers, but this model's tensors live in host "
                                         "memory; use the threads or mpi backend");
    check(options_.bucket_bytes > 0, "DistributedDataParallel: bucket_bytes must be positive");
    params_ = model_->parameters();
    const std::size_t total = flat_size(params_, dtype_);
    const std::size_t elem = size_of(dtype_);

    // Every replica starts from rank 0's parameters.
    auto flat = comm_.allocate(total * elem);
    params_to_flat(params_, flat.get());
    broadcast(comm_, flat.get(), total * elem, 0);
    flat_to_params(flat.get(), params_);

    std::vector<std::size_t> bytes;
    for (const Tensor& p : params_) bytes.push_back(static_cast<std::size_t>(p.numel()) * elem);
    bucket_params_ = assign_buckets(bytes, options_.bucket_bytes);
    bucket_of_.assign(params_.size(), params_.size());
    offset_in_bucket_.assign(params_.size(), 0);
    for (std::size_t b = 0; b < bucket_params_.size(); ++b) {
        auto bucket = std::make_unique<Bucket>();
        bucket->params = bucket_params_[b];
        for (std::size_t p : bucket->params) {
            check(p < params_.size() && bucket_of_[p] == params_.size(),
                  "DistributedDataParallel: assign_buckets must put every parameter in exactly one bucket "
                  "(parameter " + std::to_string(p) + " is out of range or in two buckets)");
            bucket_of_[p] = b;
            offset_in_bucket_[p] = bucket->count;
            bucket->count += static_cast<std::size_t>(params_[p].numel());
        }
        bucket->buffer = comm_.allocate(bucket->count * elem);
        buckets_.push_back(std::move(bucket));
    }
    for (std::size_t p = 0; p < params_.size(); ++p)
        check(bucket_of_[p] < buckets_.size(), "DistributedDataParallel: assign_buckets left parameter " +
                                                   std::to_string(p) + " out of every bucket");
    stats_.buckets = buckets_.size();

    comm_thread_ = std::make_unique<CommThread>(comm_, options_.algo, dtype_, options_.overlap);
    self_ = std::make_shared<DistributedDataParallel*>(this);
    for (std::size_t p = 0; p < params_.size(); ++p) {
        std::weak_ptr<DistributedDataParallel*> self = self_;
        params_[p].impl().grad_hooks.push_back([self, p](const Tensor& grad) {
            if (auto s = self.lock(); s && *s) (*s)->on_gradient_ready(p, grad);
        });
    }
}

DistributedDataParallel::~DistributedDataParallel() { *self_ = nullptr; }

Tensor DistributedDataParallel::forward(const Tensor& x) {
    if (gradients_ready_ != 0) {
        std::string missing;
        for (std::size_t p = 0; p < params_.size(); ++p)
            if (buckets_[bucket_of_[p]]->ready < buckets_[bucket_of_[p]]->params.size())
                missing += (missing.empty() ? "" : ", ") + std::to_string(p);
        throw Error("DistributedDataParallel: the last backward produced gradients for only " +
                    std::to_string(gradients_ready_) + " of " + std::to_string(params_.size()) +
                    " parameters, so they were never averaged; every parameter must take part in the loss "
                    "(buckets waiting on parameters " + missing + ")");
    }
    return model_->forward(x);
}

void DistributedDataParallel::on_gradient_ready(std::size_t param, const Tensor& grad) {
    if (!sync_enabled_) return;  // no_sync: accumulate locally only
    // LAB 08 BEGIN: a gradient is ready: copy it into its bucket, launch full buckets
    // Copy grad (contiguous, dtype_) into its bucket's buffer at offset_in_bucket_[param]
    // elements, count it (the bucket's `ready` and gradients_ready_), and call
    // launch_ready_buckets() when the bucket is full. When all gradients of this backward
    // have arrived, call finish_sync().
    Bucket& bucket = *buckets_[bucket_of_[param]];
    const std::size_t elem = size_of(dtype_);
    const Tensor g = grad.contiguous();
    std::memcpy(static_cast<std::byte*>(bucket.buffer.get()) + offset_in_bucket_[param] * elem, g.raw_data(),
                static_cast<std::size_t>(g.numel()) * elem);
    ++bucket.ready;
    ++gradients_ready_;
    if (bucket.ready == bucket.params.size()) launch_ready_buckets();
    if (gradients_ready_ == params_.size()) finish_sync();
    // LAB 08 END
}

void DistributedDataParallel::launch_ready_buckets() {
    // LAB 08 BEGIN: launch the full buckets in bucket order
    // Every rank must launch the same all-reduces in the same order, or the collectives
    // pair up wrongly. So launch bucket next_to_launch_ only, and then the following ones
    // while they are full too (comm_thread_->launch). Count each launch in
    // stats_.allreduces, and in stats_.launched_before_last when some gradient of this
    // backward is still missing (that is the overlap with backward).
    while (next_to_launch_ < buckets_.size() &&
           buckets_[next_to_launch_]->ready == buckets_[next_to_launch_]->params.size()) {
        comm_thread_->launch(*buckets_[next_to_launch_]);
        ++stats_.allreduces;
        if (gradients_ready_ < params_.size()) ++stats_.launched_before_last;
        ++next_to_launch_;
    }
    // LAB 08 END
}

// All gradients are in: wait for the outstanding all-reduces and write the averages back
// (dividing by N while copying: one pass over the gradients instead of two).
void DistributedDataParallel::finish_sync() {
    check(next_to_launch_ == buckets_.size(),
          "DistributedDataParallel: backward ended with " + std::to_string(buckets_.size() - next_to_launch_) +
              " bucket(s) never launched (launch_ready_buckets must launch every full bucket)");
    try {
        comm_thread_->wait_all();
    } catch (...) {
        for (auto& bucket : buckets_) bucket->ready = 0;  // let the caller handle it and go on
        next_to_launch_ = 0;
        gradients_ready_ = 0;
        throw;
    }
    const double inv = 1.0 / comm_.size();
    for (auto& bucket : buckets_) {
        for (std::size_t p : bucket->params) {
            const Tensor g = params_[p].grad();
            const auto n = static_cast<std::size_t>(g.numel());
            dispatch_floating(dtype_, "DDP average", [&]<class T>() {
                const T* sum = static_cast<const T*>(bucket->buffer.get()) + offset_in_bucket_[p];
                T* out = g.data<T>();
                for (std::size_t i = 0; i < n; ++i) out[i] = sum[i] * static_cast<T>(inv);
            });
        }
        bucket->ready = 0;
    }
    next_to_launch_ = 0;
    gradients_ready_ = 0;
    ++stats_.synced_backwards;
}

DistributedDataParallel::NoSyncGuard::NoSyncGuard(DistributedDataParallel& ddp) : ddp_(ddp) {
    ddp_.sync_enabled_ = false;
}

DistributedDataParallel::NoSyncGuard::~NoSyncGuard() { ddp_.sync_enabled_ = true; }

}  // namespace gl::dist
