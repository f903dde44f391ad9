/// @file
/// @brief The latency-bandwidth (alpha-beta) cost model of the all-reduce algorithms.
///
/// Owns: how long an all-reduce of S bytes over N workers should take when a message
/// costs alpha seconds to start, each byte beta seconds to move and gamma seconds to add:
///
/// | algorithm          | messages (alpha)   | bytes moved (beta) | bytes added (gamma) |
/// |--------------------|--------------------|--------------------|---------------------|
/// | reduce + broadcast | 2(N-1)             | 2(N-1) S           | (N-1) S             |
/// | recursive doubling | log2 N             | log2(N) S          | log2(N) S           |
/// | ring               | 2(N-1)             | 2(N-1)/N S         | (N-1)/N S           |
///
/// (counted along the critical path: the master's for reduce + broadcast; recursive
/// doubling with N not a power of two adds a fold and an unfold). The ring's bandwidth
/// term stays below 2 S for any N, while its latency term grows with N: large buffers
/// favour the ring, small buffers and many workers favour recursive doubling (which is
/// why NCCL and MPI switch algorithms by size). fit_cost_model() fits alpha, beta and
/// gamma to measured times; the claims report checks the fit and extrapolates it to
/// 1024 workers.
#pragma once

#include <vector>

#include "dist/communicator.hpp"

namespace gl::dist {

/// The three costs of the model.
struct CostModel {
    double alpha_s = 0.0;           ///< seconds per message (latency)
    double beta_s_per_byte = 0.0;   ///< seconds per byte moved (1 / bandwidth)
    double gamma_s_per_byte = 0.0;  ///< seconds per byte added (reduction)
};

/// The critical-path counts of one all-reduce (the table above).
struct CostTerms {
    double messages = 0.0;  ///< messages in sequence
    double bytes = 0.0;     ///< bytes moved in sequence
    double reduced = 0.0;   ///< bytes added in sequence
};

/// The counts for @p algo with a buffer of @p bytes over @p n workers (Library: the ring).
CostTerms allreduce_cost_terms(AllReduceAlgo algo, double bytes, int n);
/// Predicted seconds: alpha * messages + beta * bytes + gamma * reduced.
double predict_seconds(const CostModel& model, AllReduceAlgo algo, double bytes, int n);

/// One measured all-reduce time.
struct CostSample {
    AllReduceAlgo algo = AllReduceAlgo::Ring;  ///< which algorithm
    int workers = 2;                           ///< N
    double bytes = 0.0;                        ///< buffer size S
    double seconds = 0.0;                      ///< measured time of one all-reduce
};

/// Non-negative alpha, beta, gamma minimising the squared relative error over
/// @p samples (so small and large buffers count alike). Needs at least 3 samples.
CostModel fit_cost_model(const std::vector<CostSample>& samples);

}  // namespace gl::dist
