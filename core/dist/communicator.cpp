#include "dist/communicator.hpp"

#include <cstdlib>
#include <cstring>

#include "dist/collectives.hpp"
#include "profiler/profiler.hpp"

namespace gl::dist {

std::string to_string(AllReduceAlgo algo) {
    switch (algo) {
        case AllReduceAlgo::ReduceBroadcast: return "reduce_broadcast";
        case AllReduceAlgo::RecursiveDoubling: return "recursive_doubling";
        case AllReduceAlgo::Ring: return "ring";
        case AllReduceAlgo::Library: return "library";
    }
    return "?";
}

AllReduceAlgo parse_allreduce_algo(const std::string& name) {
    for (auto a : {AllReduceAlgo::ReduceBroadcast, AllReduceAlgo::RecursiveDoubling, AllReduceAlgo::Ring,
                   AllReduceAlgo::Library})
        if (to_string(a) == name) return a;
    throw Error("unknown all-reduce algorithm '" + name +
                "'; use reduce_broadcast, recursive_doubling, ring or library");
}

void Communicator::check_peer(int peer, const char* what) const {
    check(peer >= 0 && peer < size() && peer != rank(),
          std::string(what) + ": rank " + std::to_string(rank()) + " of " + std::to_string(size()) +
              " cannot talk to rank " + std::to_string(peer) + " (peers are 0.." + std::to_string(size() - 1) +
              ", other than itself)");
}

void Communicator::send(const void* data, std::size_t bytes, int dest) {
    check_peer(dest, "send");
    prof::Scope scope(prof::Category::Communication, "send");
    scope.set_work(0, static_cast<double>(bytes));
    do_send(data, bytes, dest);
    count_traffic(bytes, 0, 1);
}

void Communicator::recv(void* data, std::size_t bytes, int src) {
    check_peer(src, "recv");
    prof::Scope scope(prof::Category::Communication, "recv");
    scope.set_work(0, static_cast<double>(bytes));
    do_recv(data, bytes, src);
    stats_.bytes_received += bytes;
    stats_.messages_received += 1;
}

void Communicator::sendrecv(const void* send_data, std::size_t send_bytes, int dest, void* recv_data,
                            std::size_t recv_bytes, int src) {
    check_peer(dest, "sendrecv");
    check_peer(src, "sendrecv");
    prof::Scope scope(prof::Category::Communication, "sendrecv");
    scope.set_work(0, static_cast<double>(send_bytes + recv_bytes));
    do_sendrecv(send_data, send_bytes, dest, recv_data, recv_bytes, src);
    count_traffic(send_bytes, 0, 1);
    stats_.bytes_received += recv_bytes;
    stats_.messages_received += 1;
}

void Communicator::count_traffic(std::uint64_t sent, std::uint64_t received, std::uint64_t messages) {
    stats_.bytes_sent += sent;
    stats_.bytes_received += received;
    stats_.messages_sent += messages;
}

void Communicator::library_all_reduce(void* data, std::size_t count, DType dtype) {
    allreduce_ring(*this, data, count, dtype);
}

void Communicator::reduce_add(void* dst, const void* src, std::size_t count, DType dtype) const {
    switch (dtype) {
        case DType::Float32: {
            float* d = static_cast<float*>(dst);
            const float* s = static_cast<const float*>(src);
            for (std::size_t i = 0; i < count; ++i) d[i] += s[i];
            return;
        }
        case DType::Float64: {
            double* d = static_cast<double*>(dst);
            const double* s = static_cast<const double*>(src);
            for (std::size_t i = 0; i < count; ++i) d[i] += s[i];
            return;
        }
        default:
            throw Error("reduce_add: collectives sum float32 or float64 buffers, not " + name_of(dtype));
    }
}

void Communicator::copy(void* dst, const void* src, std::size_t bytes) const {
    if (bytes > 0) std::memcpy(dst, src, bytes);
}

std::shared_ptr<void> Communicator::allocate(std::size_t bytes) const {
    void* p = std::malloc(bytes > 0 ? bytes : 1);
    check(p != nullptr, "allocate: out of memory for a " + std::to_string(bytes) + "-byte scratch buffer");
    return std::shared_ptr<void>(p, std::free);
}

void* Communicator::scratch(std::size_t bytes) {
    if (!scratch_ || scratch_bytes_ < bytes) {
        scratch_.reset();  // free the old one first: peak memory is one buffer
        scratch_ = allocate(bytes);
        scratch_bytes_ = bytes;
    }
    return scratch_.get();
}

void Communicator::set_timeout_s(double seconds) {
    check(seconds > 0, "set_timeout_s: the timeout must be positive (got " + std::to_string(seconds) + ")");
    timeout_s_ = seconds;
}

}  // namespace gl::dist
