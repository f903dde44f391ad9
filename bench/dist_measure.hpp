// Measurements of the distribution layer, shared by bench_dist (Google Benchmark) and
// the claims report (lab 08): all-reduce times per algorithm and DP/DDP step times.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "dist/communicator.hpp"
#include "dist/ddp.hpp"

namespace gl::bench {

// Median seconds of one all-reduce of `bytes` bytes (float32) with `algo` over `workers`
// threads, over `reps` timed repetitions after one warm-up; buffers are allocated and
// touched before timing, and every repetition starts from a barrier.
double thread_allreduce_seconds(dist::AllReduceAlgo algo, int workers, std::size_t bytes, int reps);

// The same on an existing communicator (every rank must call it); the median of rank 0's
// times is returned on every rank.
double allreduce_seconds(dist::Communicator& comm, dist::AllReduceAlgo algo, std::size_t bytes, int reps);

// One data-parallel training step of an MLP (784-1024-1024-10, float32, SGD) on a global
// batch of `batch` random examples, over `workers` threads.
struct StepMeasurement {
    double seconds = 0.0;               // median step time
    std::uint64_t master_bytes = 0;     // bytes rank 0 sent + received per step
    std::uint64_t worker_bytes = 0;     // the same for rank 1 (0 with one worker)
    std::int64_t parameters = 0;        // model size
};
StepMeasurement thread_train_step(const std::string& mode, int workers, std::int64_t batch, int steps,
                                  const dist::DdpOptions& ddp_options = {});

}  // namespace gl::bench
