/// @file
/// @brief Workers that talk: the Communicator interface every backend implements.
///
/// Owns: what a worker (a rank) can do with the others: point-to-point messages, the
/// collectives built from them (collectives.hpp), the library's own all-reduce as a peer,
/// and per-rank byte and message counters. Three backends implement it: threads in one
/// process (thread_comm.hpp), MPI processes (mpi_comm.hpp) and NCCL on GPUs
/// (nccl_comm.hpp). Knows nothing about tensors, models or training (dp.hpp, ddp.hpp).
///
/// Failure is part of the interface: every blocking call gives up after timeout_s()
/// seconds, or as soon as the backend learns that the peer died, and throws CommError
/// with a message that names the ranks involved. Nothing waits forever.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "base/error.hpp"
#include "tensor/dtype.hpp"

namespace gl::dist {

/// A communication failure: a peer died, never arrived, or the ranks deadlocked.
class CommError : public Error {
public:
    /// Wraps a complete message (which ranks, what was being waited for, what to check).
    explicit CommError(const std::string& message) : Error(message) {}
};

/// What one rank has sent and received since the last reset_stats().
struct CommStats {
    std::uint64_t bytes_sent = 0;         ///< payload bytes this rank sent
    std::uint64_t bytes_received = 0;     ///< payload bytes this rank received
    std::uint64_t messages_sent = 0;      ///< point-to-point messages sent
    std::uint64_t messages_received = 0;  ///< point-to-point messages received
};

/// The all-reduce algorithms, side by side (collectives.hpp), and the library's.
enum class AllReduceAlgo {
    ReduceBroadcast,    ///< everyone sends to rank 0, which sums and sends back (a master)
    RecursiveDoubling,  ///< log2(N) rounds of pairwise exchange of the whole buffer
    Ring,               ///< reduce-scatter then all-gather around a ring: 2(N-1)/N per rank
    Library,            ///< the backend's own (MPI_Allreduce, ncclAllReduce)
};

/// "ring", "reduce_broadcast", "recursive_doubling", "library".
std::string to_string(AllReduceAlgo algo);
/// Parses the names to_string() gives; throws gl::Error listing them otherwise.
AllReduceAlgo parse_allreduce_algo(const std::string& name);

/// One rank's view of a group of workers. Methods are called by this rank's thread (one
/// thread at a time); every rank of the group must make the same sequence of collective
/// calls. Buffers live where the backend computes: host memory for threads and MPI,
/// device memory for NCCL (memory_is_device()).
class Communicator {
public:
    virtual ~Communicator() = default;

    /// This worker's number, 0..size()-1.
    virtual int rank() const = 0;
    /// Number of workers in the group.
    virtual int size() const = 0;
    /// "threads", "mpi" or "nccl".
    virtual std::string backend() const = 0;

    /// Sends @p bytes bytes to rank @p dest. Synchronous: returns once the receiver has
    /// taken the message, so two ranks that both send first deadlock (use sendrecv).
    void send(const void* data, std::size_t bytes, int dest);
    /// Receives exactly @p bytes bytes from rank @p src into @p data.
    void recv(void* data, std::size_t bytes, int src);
    /// Sends to @p dest and receives from @p src at the same time (never deadlocks in a
    /// ring, where everyone sends to the right and receives from the left).
    void sendrecv(const void* send_data, std::size_t send_bytes, int dest, void* recv_data,
                  std::size_t recv_bytes, int src);

    /// The backend's own all-reduce (sum, in place), counted in the stats by the ring
    /// formula since the library does not say what it moved. Threads have none: this
    /// runs the ring.
    virtual void library_all_reduce(void* data, std::size_t count, DType dtype);
    /// True when library_all_reduce is a real library's (MPI, NCCL).
    virtual bool has_library_all_reduce() const { return false; }

    /// dst[i] += src[i] for @p count elements, where this backend's buffers live.
    virtual void reduce_add(void* dst, const void* src, std::size_t count, DType dtype) const;
    /// Copies @p bytes bytes between two of this backend's buffers.
    virtual void copy(void* dst, const void* src, std::size_t bytes) const;
    /// A new buffer of @p bytes bytes in this backend's memory.
    virtual std::shared_ptr<void> allocate(std::size_t bytes) const;
    /// This rank's reusable scratch buffer, at least @p bytes long (valid until the next
    /// call). Algorithms use it for incoming data: allocating (and first touching) a fresh
    /// 32 MiB buffer on every all-reduce costs more than the all-reduce itself.
    void* scratch(std::size_t bytes);
    /// True when buffers are GPU memory (NCCL).
    virtual bool memory_is_device() const { return false; }

    /// Seconds a blocking call waits before it throws CommError.
    double timeout_s() const { return timeout_s_; }
    /// Changes the timeout of later blocking calls (positive).
    void set_timeout_s(double seconds);

    /// Counters since construction or the last reset.
    const CommStats& stats() const { return stats_; }
    /// Sets every counter to zero.
    void reset_stats() { stats_ = {}; }
    /// Adds to the counters (for library collectives that move data the backend cannot see).
    void count_traffic(std::uint64_t sent, std::uint64_t received, std::uint64_t messages);

protected:
    /// The backend's send; see send().
    virtual void do_send(const void* data, std::size_t bytes, int dest) = 0;
    /// The backend's receive; see recv().
    virtual void do_recv(void* data, std::size_t bytes, int src) = 0;
    /// The backend's simultaneous send and receive; see sendrecv().
    virtual void do_sendrecv(const void* send_data, std::size_t send_bytes, int dest, void* recv_data,
                             std::size_t recv_bytes, int src) = 0;
    /// Throws gl::Error unless 0 <= @p peer < size() and @p peer != rank().
    void check_peer(int peer, const char* what) const;

private:
    CommStats stats_;
    std::shared_ptr<void> scratch_;
    std::size_t scratch_bytes_ = 0;
    double timeout_s_ = 60.0;
};

}  // namespace gl::dist
