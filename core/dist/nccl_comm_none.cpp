// The NCCL backend's stand-in for builds without CUDA or NCCL: says why.
#include "dist/nccl_comm.hpp"

namespace gl::dist {

bool nccl_available() { return false; }

struct NcclCommunicator::State {};

namespace {
[[noreturn]] void unavailable() {
    throw Error("this build has no NCCL backend: it needs nvcc and NCCL (nccl.h, libnccl) at configure time, "
                "and a GPU per rank at run time");
}
}  // namespace

std::vector<std::unique_ptr<NcclCommunicator>> NcclCommunicator::for_local_devices(int) { unavailable(); }
std::unique_ptr<NcclCommunicator> NcclCommunicator::over(Communicator&) { unavailable(); }
NcclCommunicator::~NcclCommunicator() = default;
void NcclCommunicator::library_all_reduce(void*, std::size_t, DType) { unavailable(); }
void NcclCommunicator::reduce_add(void*, const void*, std::size_t, DType) const { unavailable(); }
void NcclCommunicator::copy(void*, const void*, std::size_t) const { unavailable(); }
std::shared_ptr<void> NcclCommunicator::allocate(std::size_t) const { unavailable(); }
void NcclCommunicator::do_send(const void*, std::size_t, int) { unavailable(); }
void NcclCommunicator::do_recv(void*, std::size_t, int) { unavailable(); }
void NcclCommunicator::do_sendrecv(const void*, std::size_t, int, void*, std::size_t, int) { unavailable(); }

}  // namespace gl::dist
