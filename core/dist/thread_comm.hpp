/// @file
/// @brief The thread backend: N workers as N threads of one process (tests, laptops).
///
/// Owns: mailboxes between threads and the rules that make them behave like a network.
/// A send posts a message (a pointer and a size) in the mailbox from sender to receiver
/// and waits; the receiver copies the bytes straight from the sender's buffer into its
/// own (one copy, as a NIC's DMA would) and marks the message delivered. So bytes really
/// move, the counters are exact, and a send is synchronous: two ranks that both send
/// first deadlock, exactly as with MPI_Ssend, and the timeout reports it.
///
/// Failure: a worker whose function throws or returns marks itself gone; a rank waiting
/// on it gets a CommError at once ("rank 2 failed: ..."). A worker that is alive but
/// never arrives makes the others time out after timeout_s() with a CommError.
#pragma once

#include <functional>
#include <memory>

#include "dist/communicator.hpp"

namespace gl::dist {

class ThreadGroup;

/// One rank of a ThreadGroup.
class ThreadCommunicator final : public Communicator {
public:
    /// Rank @p rank of @p group (made by run_threads or ThreadGroup::communicator).
    ThreadCommunicator(std::shared_ptr<ThreadGroup> group, int rank);
    int rank() const override { return rank_; }
    int size() const override;
    std::string backend() const override { return "threads"; }

protected:
    void do_send(const void* data, std::size_t bytes, int dest) override;
    void do_recv(void* data, std::size_t bytes, int src) override;
    void do_sendrecv(const void* send_data, std::size_t send_bytes, int dest, void* recv_data,
                     std::size_t recv_bytes, int src) override;

private:
    std::shared_ptr<ThreadGroup> group_;
    int rank_;
};

/// Runs @p fn(comm) on @p n threads, one per rank, each with its own communicator whose
/// timeout is @p timeout_s, and waits for all of them. If any rank throws, the others
/// are told (they fail fast instead of waiting), and run_threads rethrows the root cause:
/// the first failure that is not a CommError, as gl::Error "rank R: <message>", or else
/// the first CommError (whose message names the ranks).
void run_threads(int n, const std::function<void(Communicator&)>& fn, double timeout_s = 60.0);

}  // namespace gl::dist
