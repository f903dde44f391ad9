#include "dist/nccl_comm.hpp"

#include <cuda_runtime.h>
#include <nccl.h>

#include <chrono>
#include <thread>

#include "dist/collectives.hpp"

namespace gl::dist {

cudaError_t launch_add_into(void* dst, const void* src, std::size_t n, bool is_double, cudaStream_t stream);

bool nccl_available() { return true; }

namespace {

void check_cuda(cudaError_t e, const std::string& what) {
    check(e == cudaSuccess, "NCCL backend: " + what + ": " + cudaGetErrorString(e));
}

void check_nccl(ncclResult_t r, const std::string& what) {
    if (r != ncclSuccess) throw CommError("NCCL backend: " + what + ": " + ncclGetErrorString(r));
}

ncclDataType_t nccl_type(DType dtype) {
    if (dtype == DType::Float32) return ncclFloat32;
    if (dtype == DType::Float64) return ncclFloat64;
    throw Error("NCCL backend: all-reduce sums float32 or float64, not " + name_of(dtype));
}

}  // namespace

struct NcclCommunicator::State {
    ncclComm_t comm = nullptr;
    cudaStream_t stream = nullptr;
    bool aborted = false;

    // Polls the stream until its work is done or the deadline passes; NCCL kernels wait
    // for their peers on the GPU, so a missing peer shows up as a stream that never drains.
    void wait(double timeout_s, const std::string& what) {
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
        for (;;) {
            const cudaError_t e = cudaStreamQuery(stream);
            if (e == cudaSuccess) break;
            if (e != cudaErrorNotReady) check_cuda(e, what);
            ncclResult_t async = ncclSuccess;
            ncclCommGetAsyncError(comm, &async);
            check_nccl(async, what);
            if (std::chrono::steady_clock::now() >= deadline) {
                ncclCommAbort(comm);
                aborted = true;
                throw CommError("NCCL backend: " + what + " did not complete within " + std::to_string(timeout_s) +
                                " s: a peer is stuck, died or never reached this call; the communicator was aborted");
            }
            std::this_thread::yield();
        }
    }
    void ensure_usable() const { check(!aborted, "NCCL backend: the communicator was aborted after a timeout"); }
};

NcclCommunicator::NcclCommunicator(int rank, int size, int device)
    : state_(std::make_unique<State>()), rank_(rank), size_(size), device_(device) {
    check_cuda(cudaSetDevice(device), "cudaSetDevice");
    check_cuda(cudaStreamCreateWithFlags(&state_->stream, cudaStreamNonBlocking), "cudaStreamCreate");
}

NcclCommunicator::~NcclCommunicator() {
    cudaSetDevice(device_);
    if (state_->comm && !state_->aborted) ncclCommDestroy(state_->comm);
    if (state_->stream) cudaStreamDestroy(state_->stream);
}

std::vector<std::unique_ptr<NcclCommunicator>> NcclCommunicator::for_local_devices(int n) {
    int devices = 0;
    const cudaError_t e = cudaGetDeviceCount(&devices);
    check(e == cudaSuccess && devices >= n, "NCCL backend: " + std::to_string(n) + " ranks need " +
                                                std::to_string(n) + " GPUs; this machine has " +
                                                std::to_string(e == cudaSuccess ? devices : 0));
    std::vector<ncclComm_t> comms(static_cast<std::size_t>(n));
    std::vector<int> list(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) list[static_cast<std::size_t>(i)] = i;
    check_nccl(ncclCommInitAll(comms.data(), n, list.data()), "ncclCommInitAll");
    std::vector<std::unique_ptr<NcclCommunicator>> out;
    for (int i = 0; i < n; ++i) {
        out.emplace_back(new NcclCommunicator(i, n, i));
        out.back()->state_->comm = comms[static_cast<std::size_t>(i)];
    }
    return out;
}

std::unique_ptr<NcclCommunicator> NcclCommunicator::over(Communicator& bootstrap) {
    int devices = 0;
    check_cuda(cudaGetDeviceCount(&devices), "cudaGetDeviceCount");
    check(devices > 0, "NCCL backend: no GPU on this machine");
    ncclUniqueId id{};
    if (bootstrap.rank() == 0) check_nccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
    broadcast(bootstrap, &id, sizeof(id), 0);
    std::unique_ptr<NcclCommunicator> c(new NcclCommunicator(bootstrap.rank(), bootstrap.size(),
                                                             bootstrap.rank() % devices));
    check_nccl(ncclCommInitRank(&c->state_->comm, bootstrap.size(), id, bootstrap.rank()), "ncclCommInitRank");
    return c;
}

void NcclCommunicator::do_send(const void* data, std::size_t bytes, int dest) {
    state_->ensure_usable();
    check_nccl(ncclSend(data, bytes, ncclInt8, dest, state_->comm, state_->stream), "ncclSend");
    state_->wait(timeout_s(), "send to rank " + std::to_string(dest));
}

void NcclCommunicator::do_recv(void* data, std::size_t bytes, int src) {
    state_->ensure_usable();
    check_nccl(ncclRecv(data, bytes, ncclInt8, src, state_->comm, state_->stream), "ncclRecv");
    state_->wait(timeout_s(), "receive from rank " + std::to_string(src));
}

void NcclCommunicator::do_sendrecv(const void* send_data, std::size_t send_bytes, int dest, void* recv_data,
                                   std::size_t recv_bytes, int src) {
    state_->ensure_usable();
    check_nccl(ncclGroupStart(), "ncclGroupStart");
    check_nccl(ncclSend(send_data, send_bytes, ncclInt8, dest, state_->comm, state_->stream), "ncclSend");
    check_nccl(ncclRecv(recv_data, recv_bytes, ncclInt8, src, state_->comm, state_->stream), "ncclRecv");
    check_nccl(ncclGroupEnd(), "ncclGroupEnd");
    state_->wait(timeout_s(), "sendrecv with ranks " + std::to_string(dest) + " and " + std::to_string(src));
}

void NcclCommunicator::library_all_reduce(void* data, std::size_t count, DType dtype) {
    state_->ensure_usable();
    check_nccl(ncclAllReduce(data, data, count, nccl_type(dtype), ncclSum, state_->comm, state_->stream),
               "ncclAllReduce");
    state_->wait(timeout_s(), "ncclAllReduce");
    const std::uint64_t moved = allreduce_bytes_sent(AllReduceAlgo::Library, count, size_of(dtype), size_, rank_);
    count_traffic(moved, moved, 2 * static_cast<std::uint64_t>(size_ - 1));
}

void NcclCommunicator::reduce_add(void* dst, const void* src, std::size_t count, DType dtype) const {
    check(dtype == DType::Float32 || dtype == DType::Float64,
          "NCCL backend: reduce_add sums float32 or float64, not " + name_of(dtype));
    check_cuda(launch_add_into(dst, src, count, dtype == DType::Float64, state_->stream), "add kernel");
    check_cuda(cudaStreamSynchronize(state_->stream), "add kernel");
}

void NcclCommunicator::copy(void* dst, const void* src, std::size_t bytes) const {
    check_cuda(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, state_->stream), "cudaMemcpyAsync");
    check_cuda(cudaStreamSynchronize(state_->stream), "cudaMemcpyAsync");
}

std::shared_ptr<void> NcclCommunicator::allocate(std::size_t bytes) const {
    void* p = nullptr;
    check_cuda(cudaMalloc(&p, bytes > 0 ? bytes : 1), "cudaMalloc of " + std::to_string(bytes) + " bytes");
    return std::shared_ptr<void>(p, [](void* q) { cudaFree(q); });
}

}  // namespace gl::dist
