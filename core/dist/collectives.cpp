// The collectives other than the ring (which is lab 08's, in ring_allreduce.cpp), and
// the byte formulas the counters are tested against.
#include "dist/collectives.hpp"

#include <vector>

namespace gl::dist {
namespace {

std::byte* at(void* data, std::size_t elements, DType dtype) {
    return static_cast<std::byte*>(data) + elements * size_of(dtype);
}

int floor_pow2(int n) {
    int p = 1;
    while (p * 2 <= n) p *= 2;
    return p;
}

}  // namespace

void all_reduce(Communicator& comm, void* data, std::size_t count, DType dtype, AllReduceAlgo algo) {
    if (comm.size() == 1) return;
    switch (algo) {
        case AllReduceAlgo::ReduceBroadcast: return allreduce_reduce_broadcast(comm, data, count, dtype);
        case AllReduceAlgo::RecursiveDoubling: return allreduce_recursive_doubling(comm, data, count, dtype);
        case AllReduceAlgo::Ring: return allreduce_ring(comm, data, count, dtype);
        case AllReduceAlgo::Library: return comm.library_all_reduce(data, count, dtype);
    }
}

// 1. A master: rank 0 receives every buffer, adds, and sends the sum to each rank in turn.
void allreduce_reduce_broadcast(Communicator& comm, void* data, std::size_t count, DType dtype) {
    const int n = comm.size();
    const std::size_t bytes = count * size_of(dtype);
    if (n == 1) return;
    if (comm.rank() == 0) {
        void* incoming = comm.scratch(bytes);
        for (int src = 1; src < n; ++src) {
            comm.recv(incoming, bytes, src);
            comm.reduce_add(data, incoming, count, dtype);
        }
        for (int dest = 1; dest < n; ++dest) comm.send(data, bytes, dest);
    } else {
        comm.send(data, bytes, 0);
        comm.recv(data, bytes, 0);
    }
}

// 2. Recursive doubling. With p = the largest power of two <= N, ranks p..N-1 fold their
// buffer into rank r - p first; ranks 0..p-1 then exchange whole buffers with the rank
// whose number differs in bit k, for k = 0..log2(p)-1, adding each time; finally the
// folded ranks get the result back.
void allreduce_recursive_doubling(Communicator& comm, void* data, std::size_t count, DType dtype) {
    const int n = comm.size(), r = comm.rank();
    const std::size_t bytes = count * size_of(dtype);
    if (n == 1) return;
    const int p = floor_pow2(n);
    if (r >= p) {
        comm.send(data, bytes, r - p);
        comm.recv(data, bytes, r - p);
        return;
    }
    void* incoming = comm.scratch(bytes);
    if (r + p < n) {
        comm.recv(incoming, bytes, r + p);
        comm.reduce_add(data, incoming, count, dtype);
    }
    for (int distance = 1; distance < p; distance *= 2) {
        const int partner = r ^ distance;
        comm.sendrecv(data, bytes, partner, incoming, bytes, partner);
        comm.reduce_add(data, incoming, count, dtype);
    }
    if (r + p < n) comm.send(data, bytes, r + p);
}

Chunk ring_chunk(std::size_t count, int n, int i) {
    const auto un = static_cast<std::size_t>(n), ui = static_cast<std::size_t>(i);
    const std::size_t begin = count * ui / un, end = count * (ui + 1) / un;
    return {begin, end - begin};
}

void allreduce_ring(Communicator& comm, void* data, std::size_t count, DType dtype) {
    if (comm.size() == 1) return;
    reduce_scatter_ring(comm, data, count, dtype);
    all_gather_ring(comm, data, count, dtype);
}

void reduce_scatter(Communicator& comm, const void* in, void* out, std::size_t count_per_rank, DType dtype) {
    const std::size_t total = count_per_rank * static_cast<std::size_t>(comm.size());
    auto work = comm.allocate(total * size_of(dtype));
    comm.copy(work.get(), in, total * size_of(dtype));
    reduce_scatter_ring(comm, work.get(), total, dtype);
    const Chunk mine = ring_chunk(total, comm.size(), comm.rank());
    comm.copy(out, at(work.get(), mine.begin, dtype), mine.count * size_of(dtype));
}

void all_gather(Communicator& comm, const void* in, void* out, std::size_t count, DType dtype) {
    const std::size_t total = count * static_cast<std::size_t>(comm.size());
    comm.copy(at(out, count * static_cast<std::size_t>(comm.rank()), dtype), in, count * size_of(dtype));
    all_gather_ring(comm, out, total, dtype);
}

// Binomial tree: in round k, every rank that already has the data (relative rank below
// 2^k) sends it to the rank 2^k further on.
void broadcast(Communicator& comm, void* data, std::size_t bytes, int root) {
    const int n = comm.size();
    check(root >= 0 && root < n, "broadcast: root " + std::to_string(root) + " is not a rank of a group of " +
                                     std::to_string(n));
    const int me = (comm.rank() - root + n) % n;  // rank relative to the root
    for (int distance = 1; distance < n; distance *= 2) {
        if (me < distance && me + distance < n) comm.send(data, bytes, (me + distance + root) % n);
        else if (me >= distance && me < 2 * distance) comm.recv(data, bytes, (me - distance + root) % n);
    }
}

// Dissemination: in round k, tell rank r + 2^k "I am here" and hear it from rank r - 2^k.
// After ceil(log2 N) rounds every rank has (indirectly) heard from every other.
void barrier(Communicator& comm) {
    const int n = comm.size(), r = comm.rank();
    char token = 0, heard = 0;
    for (int distance = 1; distance < n; distance *= 2)
        comm.sendrecv(&token, 1, (r + distance) % n, &heard, 1, (r - distance + n) % n);
}

std::uint64_t allreduce_bytes_sent(AllReduceAlgo algo, std::size_t count, std::size_t elem_size, int n,
                                   int rank) {
    if (n <= 1) return 0;
    const std::uint64_t buffer = count * elem_size;
    switch (algo) {
        case AllReduceAlgo::ReduceBroadcast:
            return rank == 0 ? buffer * static_cast<std::uint64_t>(n - 1) : buffer;
        case AllReduceAlgo::RecursiveDoubling: {
            const int p = floor_pow2(n);
            std::uint64_t rounds = 0;
            for (int d = 1; d < p; d *= 2) ++rounds;
            if (rank >= p) return buffer;
            return buffer * rounds + (rank + p < n ? buffer : 0);
        }
        case AllReduceAlgo::Ring:
        case AllReduceAlgo::Library: {
            // Reduce-scatter sends every chunk but the rank's own; all-gather every chunk
            // but the one of the rank after it.
            const std::uint64_t own = ring_chunk(count, n, rank).count;
            const std::uint64_t next = ring_chunk(count, n, (rank + 1) % n).count;
            return (2 * static_cast<std::uint64_t>(count) - own - next) * elem_size;
        }
    }
    return 0;
}

}  // namespace gl::dist
