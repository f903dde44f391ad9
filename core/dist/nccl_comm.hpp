/// @file
/// @brief The NCCL backend: one GPU per worker; compiled whenever CUDA and NCCL are
/// found, run only where GPUs are.
///
/// Owns: NCCL communicators, a CUDA stream per rank, device scratch buffers and the
/// element-wise add the all-reduce algorithms need (a small kernel), so the algorithms
/// of collectives.hpp run unchanged on GPU buffers next to ncclAllReduce. Buffers passed
/// to this backend are device pointers. Every call waits on its stream by polling, and
/// after timeout_s() aborts the NCCL communicator and throws CommError.
#pragma once

#include <memory>
#include <vector>

#include "dist/communicator.hpp"

namespace gl::dist {

/// True when this build has the NCCL backend.
bool nccl_available();

/// One rank of an NCCL communicator, bound to one GPU.
class NcclCommunicator final : public Communicator {
public:
    /// One communicator per GPU 0..n-1 of this machine, for n threads of one process
    /// (ncclCommInitAll); throws when there are fewer than n GPUs.
    static std::vector<std::unique_ptr<NcclCommunicator>> for_local_devices(int n);
    /// One rank per process of @p bootstrap (usually the MPI world), on GPU (rank mod
    /// GPUs per machine); NCCL's unique id is broadcast over @p bootstrap.
    static std::unique_ptr<NcclCommunicator> over(Communicator& bootstrap);
    ~NcclCommunicator() override;
    int rank() const override { return rank_; }
    int size() const override { return size_; }
    std::string backend() const override { return "nccl"; }
    /// ncclAllReduce (sum, in place) on this rank's stream.
    void library_all_reduce(void* data, std::size_t count, DType dtype) override;
    bool has_library_all_reduce() const override { return true; }
    /// A kernel adding @p src into @p dst on the device.
    void reduce_add(void* dst, const void* src, std::size_t count, DType dtype) const override;
    /// Device-to-device copy.
    void copy(void* dst, const void* src, std::size_t bytes) const override;
    /// cudaMalloc'd scratch.
    std::shared_ptr<void> allocate(std::size_t bytes) const override;
    bool memory_is_device() const override { return true; }
    /// The GPU this rank uses.
    int device() const { return device_; }

protected:
    void do_send(const void* data, std::size_t bytes, int dest) override;
    void do_recv(void* data, std::size_t bytes, int src) override;
    void do_sendrecv(const void* send_data, std::size_t send_bytes, int dest, void* recv_data,
                     std::size_t recv_bytes, int src) override;

private:
    NcclCommunicator(int rank, int size, int device);
    struct State;
    std::unique_ptr<State> state_;
    int rank_ = 0, size_ = 1, device_ = 0;
};

}  // namespace gl::dist
