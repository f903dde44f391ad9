/// @file
/// @brief Collectives written over send/recv: three all-reduce algorithms side by side,
/// reduce-scatter, all-gather, broadcast and barrier, and the bytes each must move.
///
/// The algorithms, in the order a student would invent them (all sum, in place):
///
/// 1. allreduce_reduce_broadcast: every rank sends its buffer to rank 0, which adds them
///    up and sends the sum back to each. Rank 0 moves 2(N-1) buffers: what a master
///    does, and why it becomes the bottleneck (claim DP-1).
/// 2. allreduce_recursive_doubling: in round k, rank r swaps its whole buffer with rank
///    r XOR 2^k and adds. log2(N) rounds: few messages (good for small buffers), but
///    every rank moves log2(N) whole buffers.
/// 3. allreduce_ring (lab 08): reduce-scatter then all-gather around a ring, one chunk
///    of size S/N per step. Each rank sends 2(N-1)/N of the buffer, independent of N:
///    bandwidth-optimal (claim DP-2; Horovod, NCCL).
///
/// The library's own all-reduce (MPI_Allreduce, ncclAllReduce) is the peer in tests and
/// benchmarks: AllReduceAlgo::Library. Knows nothing about tensors or training.
#pragma once

#include <cstddef>
#include <cstdint>

#include "dist/communicator.hpp"

namespace gl::dist {

/// Sum all-reduce of @p count elements at @p data, in place, with algorithm @p algo.
void all_reduce(Communicator& comm, void* data, std::size_t count, DType dtype,
                AllReduceAlgo algo = AllReduceAlgo::Ring);

/// Algorithm 1: reduce to rank 0, then rank 0 sends the sum to every rank.
void allreduce_reduce_broadcast(Communicator& comm, void* data, std::size_t count, DType dtype);
/// Algorithm 2: recursive doubling; for N not a power of two, the extra ranks first fold
/// their buffers into partners and receive the result at the end.
void allreduce_recursive_doubling(Communicator& comm, void* data, std::size_t count, DType dtype);
/// Algorithm 3: reduce_scatter_ring then all_gather_ring.
void allreduce_ring(Communicator& comm, void* data, std::size_t count, DType dtype);

/// A contiguous piece of a buffer, in elements.
struct Chunk {
    std::size_t begin = 0;  ///< first element
    std::size_t count = 0;  ///< number of elements
};
/// Chunk @p i of @p n of a buffer of @p count elements: as equal as possible (sizes
/// differ by at most one element), in order, covering the buffer. Chunk i is the part
/// rank i owns after a reduce-scatter.
Chunk ring_chunk(std::size_t count, int n, int i);

/// Ring reduce-scatter, in place: afterwards chunk rank() (ring_chunk) of @p data holds
/// the sum over all ranks of that chunk; the other chunks hold partial sums (garbage).
/// N-1 steps; in each a rank sends one chunk to rank+1 and receives one from rank-1.
void reduce_scatter_ring(Communicator& comm, void* data, std::size_t count, DType dtype);
/// Ring all-gather, in place: on entry each rank's chunk rank() is its contribution;
/// afterwards every rank has every rank's chunk. N-1 steps, one chunk per step.
void all_gather_ring(Communicator& comm, void* data, std::size_t count, DType dtype);

/// Reduce-scatter into a separate buffer: @p out (count_per_rank elements) receives this
/// rank's slice of the sum of every rank's @p in (size() * count_per_rank elements).
void reduce_scatter(Communicator& comm, const void* in, void* out, std::size_t count_per_rank, DType dtype);
/// All-gather: @p out (size() * count elements) receives every rank's @p in, in rank order.
void all_gather(Communicator& comm, const void* in, void* out, std::size_t count, DType dtype);
/// Copies @p bytes bytes at @p data on rank @p root to every rank (binomial tree,
/// ceil(log2 N) rounds).
void broadcast(Communicator& comm, void* data, std::size_t bytes, int root);
/// Returns on any rank only after every rank has called it (dissemination barrier,
/// ceil(log2 N) rounds of empty messages).
void barrier(Communicator& comm);

/// The payload bytes rank @p rank of @p n sends in one all-reduce of @p count elements of
/// @p elem_size bytes with @p algo: the formulas the byte counters are tested against
/// (Library counts as the ring).
std::uint64_t allreduce_bytes_sent(AllReduceAlgo algo, std::size_t count, std::size_t elem_size, int n,
                                   int rank);

}  // namespace gl::dist
