#include "dist/thread_comm.hpp"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include "parallel/thread_pool.hpp"

namespace gl::dist {

// A message in a mailbox: the sender's buffer, until the receiver has copied it.
struct Message {
    enum class State { Queued, Taken, Done };
    const void* data = nullptr;
    std::size_t bytes = 0;
    State state = State::Queued;
    std::string error;  // set by the receiver when the sizes disagree
};

// The state the ranks of one group share: a mailbox per (sender, receiver) pair, and
// which ranks are gone (failed or returned) and why. One mutex and one condition
// variable: simple, and enough for a handful of ranks.
class ThreadGroup {
public:
    using Clock = std::chrono::steady_clock;

    explicit ThreadGroup(int n) : n_(n), boxes_(static_cast<std::size_t>(n * n)), gone_(static_cast<std::size_t>(n)) {}
    int size() const { return n_; }

    void post(int src, int dst, Message& msg) {
        std::lock_guard lock(m_);
        throw_if_gone(src, dst, "send to");
        box(src, dst).push_back(&msg);
        cv_.notify_all();
    }

    // Waits until the receiver has copied the message; on a timeout or a receiver that is
    // gone, withdraws it (so the sender's buffer may go away) and throws.
    void wait_delivered(int src, int dst, Message& msg, double timeout_s) {
        std::unique_lock lock(m_);
        const auto deadline = Clock::now() + to_duration(timeout_s);
        while (msg.state != Message::State::Done) {
            if (msg.state == Message::State::Queued) {
                if (!gone_[idx(dst)].empty()) {
                    withdraw_locked(src, dst, msg);
                    throw_if_gone(src, dst, "send to");
                }
                if (Clock::now() >= deadline) {
                    withdraw_locked(src, dst, msg);
                    throw CommError("rank " + std::to_string(src) + ": rank " + std::to_string(dst) +
                                    " did not receive a " + std::to_string(msg.bytes) + "-byte message within " +
                                    seconds(timeout_s) + ". " + deadlock_hint(dst));
                }
                cv_.wait_until(lock, deadline);
            } else {
                cv_.wait(lock);  // being copied right now: finishes without any peer's help
            }
        }
        if (!msg.error.empty()) throw CommError(msg.error);
    }

    // Removes a message nobody has taken yet; waits for a copy in progress to finish.
    void withdraw(int src, int dst, Message& msg) {
        std::unique_lock lock(m_);
        while (msg.state == Message::State::Taken) cv_.wait(lock);
        if (msg.state == Message::State::Queued) withdraw_locked(src, dst, msg);
    }

    // Takes the oldest message from src to dst and copies it into data.
    void take(int src, int dst, void* data, std::size_t bytes, double timeout_s) {
        Message* msg = nullptr;
        {
            std::unique_lock lock(m_);
            const auto deadline = Clock::now() + to_duration(timeout_s);
            auto& q = box(src, dst);
            while (q.empty()) {
                if (!gone_[idx(src)].empty()) throw_if_gone(dst, src, "receive from");
                if (Clock::now() >= deadline)
                    throw CommError("rank " + std::to_string(dst) + ": no message from rank " + std::to_string(src) +
                                    " within " + seconds(timeout_s) + ". " + deadlock_hint(src));
                cv_.wait_until(lock, deadline);
            }
            msg = q.front();
            q.pop_front();
            if (msg->bytes != bytes) {
                msg->error = "rank " + std::to_string(dst) + " expected " + std::to_string(bytes) +
                             " bytes from rank " + std::to_string(src) + ", which sent " + std::to_string(msg->bytes) +
                             ": the ranks disagree on the message size (did every rank call the collective with "
                             "the same count and dtype?)";
                msg->state = Message::State::Done;
                cv_.notify_all();
                throw CommError(msg->error);
            }
            msg->state = Message::State::Taken;
        }
        // The copy happens outside the lock, so ranks copy in parallel; the sender waits.
        if (bytes > 0) std::memcpy(data, msg->data, bytes);
        std::lock_guard lock(m_);
        msg->state = Message::State::Done;
        cv_.notify_all();
    }

    // Rank r will send and receive nothing more: its peers stop waiting for it.
    void leave(int r, const std::string& why) {
        std::lock_guard lock(m_);
        gone_[idx(r)] = why;
        cv_.notify_all();
    }

private:
    std::size_t idx(int r) const { return static_cast<std::size_t>(r); }
    std::deque<Message*>& box(int src, int dst) { return boxes_[idx(src * n_ + dst)]; }

    void withdraw_locked(int src, int dst, Message& msg) {
        auto& q = box(src, dst);
        q.erase(std::remove(q.begin(), q.end(), &msg), q.end());
        msg.state = Message::State::Done;
    }

    void throw_if_gone(int me, int peer, const char* what) const {
        const std::string& why = gone_[idx(peer)];
        if (why.empty()) return;
        throw CommError("rank " + std::to_string(me) + ": cannot " + what + " rank " + std::to_string(peer) +
                        ", which " + why);
    }

    static std::string seconds(double s) {
        std::string t = std::to_string(s);
        t.erase(t.find_last_not_of('0') + 1);
        if (!t.empty() && t.back() == '.') t.pop_back();
        return t + " s";
    }

    static std::string deadlock_hint(int peer) {
        return "Rank " + std::to_string(peer) +
               " is stuck, never reached this call, or the ranks are deadlocked: every rank waiting to "
               "receive, or every rank sending first (sends are synchronous; use sendrecv in a ring).";
    }

    static std::chrono::nanoseconds to_duration(double s) {
        return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::duration<double>(s));
    }

    int n_;
    std::mutex m_;
    std::condition_variable cv_;
    std::vector<std::deque<Message*>> boxes_;
    std::vector<std::string> gone_;
};

ThreadCommunicator::ThreadCommunicator(std::shared_ptr<ThreadGroup> group, int rank)
    : group_(std::move(group)), rank_(rank) {
    check(group_ != nullptr && rank >= 0 && rank < group_->size(),
          "ThreadCommunicator: rank " + std::to_string(rank) + " is not in the group");
}

int ThreadCommunicator::size() const { return group_->size(); }

void ThreadCommunicator::do_send(const void* data, std::size_t bytes, int dest) {
    Message msg;
    msg.data = data;
    msg.bytes = bytes;
    group_->post(rank_, dest, msg);
    group_->wait_delivered(rank_, dest, msg, timeout_s());
}

void ThreadCommunicator::do_recv(void* data, std::size_t bytes, int src) {
    group_->take(src, rank_, data, bytes, timeout_s());
}

void ThreadCommunicator::do_sendrecv(const void* send_data, std::size_t send_bytes, int dest, void* recv_data,
                                     std::size_t recv_bytes, int src) {
    Message msg;
    msg.data = send_data;
    msg.bytes = send_bytes;
    group_->post(rank_, dest, msg);  // posted, not yet delivered: the receive can proceed
    try {
        group_->take(src, rank_, recv_data, recv_bytes, timeout_s());
    } catch (...) {
        group_->withdraw(rank_, dest, msg);  // msg lives on this stack frame
        throw;
    }
    group_->wait_delivered(rank_, dest, msg, timeout_s());
}

void run_threads(int n, const std::function<void(Communicator&)>& fn, double timeout_s) {
    check(n >= 1, "run_threads: need at least one worker (got " + std::to_string(n) + ")");
    auto group = std::make_shared<ThreadGroup>(n);
    struct Failure {
        int rank;
        std::string message;
        bool comm;
    };
    std::mutex failures_mutex;
    std::vector<Failure> failures;  // in the order they happened
    std::vector<std::thread> threads;
    threads.reserve(static_cast<std::size_t>(n));
    for (int r = 0; r < n; ++r) {
        threads.emplace_back([&, r] {
            release_inherited_pinning();  // a worker is not held to its creator's CPU
            std::string why = "has returned (it will send and receive nothing more)";
            try {
                ThreadCommunicator comm(group, r);
                comm.set_timeout_s(timeout_s);
                fn(comm);
            } catch (const std::exception& e) {
                why = std::string("failed: ") + e.what();
                std::lock_guard lock(failures_mutex);
                failures.push_back({r, e.what(), dynamic_cast<const CommError*>(&e) != nullptr});
            }
            group->leave(r, why);
        });
    }
    for (auto& t : threads) t.join();
    if (failures.empty()) return;
    // The root cause is the first failure that is not a communication error (those are
    // usually its consequences on the other ranks); otherwise the first one.
    auto cause = std::find_if(failures.begin(), failures.end(), [](const Failure& f) { return !f.comm; });
    if (cause == failures.end()) cause = failures.begin();
    if (cause->comm) throw CommError(cause->message);  // already names the ranks
    throw Error("rank " + std::to_string(cause->rank) + ": " + cause->message);
}

}  // namespace gl::dist
