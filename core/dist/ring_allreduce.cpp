// The ring all-reduce (lab 08): reduce-scatter, then all-gather, around a ring of N ranks.
//
// Picture the buffer cut into N chunks (ring_chunk). In each of N-1 steps every rank
// sends one chunk to its right neighbour and receives one from its left neighbour, all
// ranks at once, so every link of the ring is busy and none is busier than the others.
// Each rank sends (N-1) chunks in each phase: 2(N-1)/N of the buffer in all, whatever N.
#include "dist/collectives.hpp"

namespace gl::dist {
namespace {

std::byte* chunk_ptr(void* data, const Chunk& c, DType dtype) {
    return static_cast<std::byte*>(data) + c.begin * size_of(dtype);
}

int mod(int a, int n) { return ((a % n) + n) % n; }

}  // namespace

void reduce_scatter_ring(Communicator& comm, void* data, std::size_t count, DType dtype) {
    const int n = comm.size(), r = comm.rank();
    if (n == 1) return;
    // LAB 08 BEGIN: ring reduce-scatter
    // In step s = 0..n-2, send chunk (r - s - 1) mod n to rank (r + 1) mod n and, at the
    // same time, receive chunk (r - s - 2) mod n from rank (r - 1) mod n into a scratch
    // buffer (comm.scratch), then add it into your copy of that chunk (comm.reduce_add).
    // After the last step, chunk r holds the sum over all ranks.
    // Use comm.sendrecv: if every rank calls send() first, every rank waits for a
    // receiver that never comes (the thread and MPI backends send synchronously), and
    // the communicator reports a deadlock after its timeout.
    const std::size_t largest = ring_chunk(count, n, n - 1).count;  // the last chunk is never smaller
    void* incoming = comm.scratch(largest * size_of(dtype));
    const int right = mod(r + 1, n), left = mod(r - 1, n);
    for (int s = 0; s < n - 1; ++s) {
        const Chunk out = ring_chunk(count, n, mod(r - s - 1, n));
        const Chunk in = ring_chunk(count, n, mod(r - s - 2, n));
        comm.sendrecv(chunk_ptr(data, out, dtype), out.count * size_of(dtype), right, incoming,
                      in.count * size_of(dtype), left);
        comm.reduce_add(chunk_ptr(data, in, dtype), incoming, in.count, dtype);
    }
    // LAB 08 END
}

void all_gather_ring(Communicator& comm, void* data, std::size_t count, DType dtype) {
    const int n = comm.size(), r = comm.rank();
    if (n == 1) return;
    // LAB 08 BEGIN: ring all-gather
    // Every rank starts with its own chunk r complete. In step s = 0..n-2, send chunk
    // (r - s) mod n to the right and receive chunk (r - s - 1) mod n from the left,
    // straight into its place in data (no scratch, no adding: it is already the sum).
    const int right = mod(r + 1, n), left = mod(r - 1, n);
    for (int s = 0; s < n - 1; ++s) {
        const Chunk out = ring_chunk(count, n, mod(r - s, n));
        const Chunk in = ring_chunk(count, n, mod(r - s - 1, n));
        comm.sendrecv(chunk_ptr(data, out, dtype), out.count * size_of(dtype), right, chunk_ptr(data, in, dtype),
                      in.count * size_of(dtype), left);
    }
    // LAB 08 END
}

}  // namespace gl::dist
