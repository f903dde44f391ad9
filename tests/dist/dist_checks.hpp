// Checks of the collectives and of DP/DDP that run on one rank of any backend: the
// thread tests call them inside run_threads, the MPI tests once per process under mpirun.
// Buffers hold small integers, so every summation order gives the exact same floats and
// results can be compared with ==.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "data/dataset.hpp"
#include "dist/collectives.hpp"
#include "dist/ddp.hpp"
#include "dist/dp.hpp"
#include "dist/flat_params.hpp"
#include "nn/module.hpp"
#include "ops/ops.hpp"
#include "optim/optimizer.hpp"
#include "training/toy_models.hpp"

namespace gl::dist::testing {

// Rank r's contribution to element i, and the exact sum over n ranks.
inline double contribution(int rank, std::size_t i) { return static_cast<double>((rank + 1) * (i % 7 + 1)); }
inline double expected_sum(int n, std::size_t i) { return static_cast<double>(n * (n + 1) / 2 * (i % 7 + 1)); }

template <class T>
std::vector<T> filled(int rank, std::size_t count) {
    std::vector<T> v(count);
    for (std::size_t i = 0; i < count; ++i) v[i] = static_cast<T>(contribution(rank, i));
    return v;
}

// Runs one all-reduce; checks the result against the exact sum and against the library
// all-reduce, and the bytes sent against the formula.
template <class T>
void check_all_reduce(Communicator& comm, AllReduceAlgo algo, std::size_t count) {
    const int n = comm.size(), r = comm.rank();
    auto data = filled<T>(r, count);
    comm.reset_stats();
    all_reduce(comm, data.data(), count, dtype_of<T>(), algo);
    const CommStats s = comm.stats();
    auto peer = filled<T>(r, count);
    all_reduce(comm, peer.data(), count, dtype_of<T>(), AllReduceAlgo::Library);
    std::size_t wrong = 0;
    for (std::size_t i = 0; i < count; ++i) wrong += data[i] != static_cast<T>(expected_sum(n, i));
    EXPECT_EQ(wrong, 0u) << to_string(algo) << ": " << wrong << " of " << count << " elements differ from the sum"
                         << " (rank " << r << " of " << n << ")";
    EXPECT_TRUE(data == peer) << to_string(algo) << " differs from the library all-reduce (count " << count
                              << ", rank " << r << " of " << n << ")";
    EXPECT_EQ(s.bytes_sent, allreduce_bytes_sent(algo, count, sizeof(T), n, r))
        << to_string(algo) << ": bytes sent by rank " << r << " of " << n << ", count " << count;
}

// Every algorithm at sizes that are and are not multiples of N (and smaller than N).
inline void check_all_collectives(Communicator& comm) {
    const int n = comm.size(), r = comm.rank();
    for (auto algo : {AllReduceAlgo::ReduceBroadcast, AllReduceAlgo::RecursiveDoubling, AllReduceAlgo::Ring,
                      AllReduceAlgo::Library})
        for (std::size_t count : {std::size_t{1}, std::size_t{3}, std::size_t{12}, std::size_t{1000},
                                  std::size_t{4099}, std::size_t{65536}}) {
            check_all_reduce<float>(comm, algo, count);
            check_all_reduce<double>(comm, algo, count);
        }

    // Ring: per-rank bytes exactly 2(N-1)/N of the buffer when N divides it.
    const std::size_t count = 1 << 14;  // divisible by 2 and 4
    if (count % static_cast<std::size_t>(n) == 0) {
        auto data = filled<float>(r, count);
        comm.reset_stats();
        allreduce_ring(comm, data.data(), count, DType::Float32);
        EXPECT_EQ(comm.stats().bytes_sent * static_cast<std::uint64_t>(n),
                  2 * static_cast<std::uint64_t>(n - 1) * count * sizeof(float));
        EXPECT_EQ(comm.stats().bytes_received, comm.stats().bytes_sent);
        EXPECT_EQ(comm.stats().messages_sent, 2 * static_cast<std::uint64_t>(n - 1));
    }

    // Reduce-scatter and all-gather into separate buffers.
    const std::size_t per = 5;
    const auto in = filled<double>(r, per * static_cast<std::size_t>(n));
    std::vector<double> slice(per);
    reduce_scatter(comm, in.data(), slice.data(), per, DType::Float64);
    for (std::size_t i = 0; i < per; ++i)
        EXPECT_EQ(slice[i], expected_sum(n, per * static_cast<std::size_t>(r) + i)) << "reduce_scatter, rank " << r;
    std::vector<double> mine(per, r + 0.5), all(per * static_cast<std::size_t>(n));
    all_gather(comm, mine.data(), all.data(), per, DType::Float64);
    for (std::size_t i = 0; i < all.size(); ++i) EXPECT_EQ(all[i], static_cast<double>(i / per) + 0.5) << "all_gather";

    // Broadcast from every root; barrier.
    for (int root = 0; root < n; ++root) {
        std::vector<int> v(17, r == root ? root * 10 + 1 : -1);
        broadcast(comm, v.data(), v.size() * sizeof(int), root);
        EXPECT_EQ(v, std::vector<int>(17, root * 10 + 1)) << "broadcast from " << root << " to rank " << r;
    }
    barrier(comm);
}

// ---- Training -------------------------------------------------------------------------

// A small MLP (8-16-3) whose initial weights depend only on the seed.
inline std::shared_ptr<nn::Sequential> small_net(std::uint64_t seed) {
    Rng rng(seed);
    return nn::make_simple_net(rng, 8, 16, 3);
}

// A fixed global batch of `rows` examples with 3 classes.
inline Batch global_batch(std::int64_t rows, std::uint64_t seed) {
    Rng rng(seed);
    Batch b{rand_uniform({rows, 8}, -1, 1, rng), empty({rows}, DType::Int32)};
    auto* t = b.targets.data<std::int32_t>();
    for (std::int64_t i = 0; i < rows; ++i) t[i] = static_cast<std::int32_t>(rng.below(3));
    return b;
}

// Rows [begin, begin + count) of a batch.
inline Batch rows_of(const Batch& b, std::int64_t begin, std::int64_t count) {
    TensorDataset d(b.inputs, b.targets, 3);
    std::vector<std::size_t> idx;
    for (std::int64_t i = begin; i < begin + count; ++i) idx.push_back(static_cast<std::size_t>(i));
    return d.get_batch(idx);
}

// One process, the whole batch, `steps` SGD steps: the model DDP and DP must reproduce.
inline std::shared_ptr<nn::Sequential> reference_training(const std::vector<Batch>& batches, double lr) {
    auto net = small_net(11);
    optim::SGD opt(net->parameters(), lr);
    for (const Batch& b : batches) {
        opt.zero_grad();
        cross_entropy(net->forward(b.inputs), b.targets).backward();
        opt.step();
    }
    return net;
}

constexpr double kTolerance = 1e-5;  // float32: different summation orders, a few steps

// DDP on N ranks, each on its 1/N of every global batch, ends where one process does.
inline void check_ddp_equivalence(Communicator& comm, std::size_t bucket_bytes, bool overlap,
                                  AllReduceAlgo algo = AllReduceAlgo::Ring) {
    const int n = comm.size(), r = comm.rank();
    const std::int64_t local = 6, rows = local * n;
    std::vector<Batch> batches;
    for (int s = 0; s < 4; ++s) batches.push_back(global_batch(rows, 100 + static_cast<std::uint64_t>(s)));
    // Replicas start from different weights: DDP's broadcast must fix that.
    auto net = small_net(r == 0 ? 11 : 1000 + static_cast<std::uint64_t>(r));
    DistributedDataParallel ddp(net, comm, {.bucket_bytes = bucket_bytes, .algo = algo, .overlap = overlap});
    optim::SGD opt(net->parameters(), 0.5);
    for (const Batch& b : batches) {
        const Batch mine = rows_of(b, local * r, local);
        opt.zero_grad();
        cross_entropy(ddp.forward(mine.inputs), mine.targets).backward();
        opt.step();
    }
    const auto ref = reference_training(batches, 0.5);
    EXPECT_LT(max_abs_difference(net->parameters(), ref->parameters()), kTolerance)
        << "DDP on " << n << " ranks (rank " << r << ", buckets of " << bucket_bytes << " bytes)";
    EXPECT_EQ(ddp.stats().synced_backwards, batches.size());
    EXPECT_EQ(ddp.stats().allreduces, batches.size() * ddp.stats().buckets);
    if (ddp.stats().buckets > 1) {
        EXPECT_GT(ddp.stats().launched_before_last, 0u) << "no bucket was launched while backward was running";
    }
}

// k micro-batches under no_sync (loss scaled by 1/k), then one synced: equals one step
// on the k-times larger global batch.
inline void check_ddp_accumulation(Communicator& comm, int k, AllReduceAlgo algo = AllReduceAlgo::Ring) {
    const int n = comm.size(), r = comm.rank();
    const std::int64_t micro = 3, rows = micro * k * n;
    const Batch global = global_batch(rows, 7);
    auto net = small_net(11);
    DistributedDataParallel ddp(net, comm, {.bucket_bytes = 256, .algo = algo});
    optim::SGD opt(net->parameters(), 0.5);
    opt.zero_grad();
    const std::uint64_t bytes_before = comm.stats().bytes_sent;
    for (int m = 0; m < k; ++m) {
        // Micro-batch m of every rank together is a contiguous block of the global batch.
        const Batch mb = rows_of(global, (static_cast<std::int64_t>(m) * n + r) * micro, micro);
        const Tensor loss = cross_entropy(ddp.forward(mb.inputs), mb.targets) * (1.0 / k);
        if (m + 1 < k) {
            auto guard = ddp.no_sync();
            loss.backward();
            EXPECT_EQ(comm.stats().bytes_sent, bytes_before) << "a backward under no_sync communicated";
        } else {
            loss.backward();
        }
    }
    opt.step();
    EXPECT_EQ(ddp.stats().synced_backwards, 1u) << "only the last micro-batch synchronises";
    if (n > 1) {
        EXPECT_GT(comm.stats().bytes_sent, bytes_before) << "the last backward did not synchronise";
    }
    const auto ref = reference_training({global}, 0.5);
    EXPECT_LT(max_abs_difference(net->parameters(), ref->parameters()), kTolerance)
        << "accumulating " << k << " micro-batches on " << n << " ranks";
}

// DataParallel's master ends where one process does; the replicas hold its parameters.
inline void check_dp_equivalence(Communicator& comm) {
    const int n = comm.size(), r = comm.rank();
    std::vector<Batch> batches;
    for (int s = 0; s < 3; ++s) batches.push_back(global_batch(5 * n + 1, 200 + static_cast<std::uint64_t>(s)));
    auto net = small_net(r == 0 ? 11 : 999);
    DataParallel dp(net, comm);
    std::unique_ptr<optim::SGD> opt;
    if (r == 0) opt = std::make_unique<optim::SGD>(net->parameters(), 0.5);
    for (const Batch& b : batches) {
        const DpStepResult s = r == 0 ? dp.step(b, opt.get()) : dp.step({}, nullptr);
        if (r == 0) {
            EXPECT_EQ(s.examples, b.targets.numel());
        }
    }
    if (r == 0) {
        const auto ref = reference_training(batches, 0.5);
        EXPECT_LT(max_abs_difference(net->parameters(), ref->parameters()), kTolerance) << "DP on " << n << " ranks";
    }
}

}  // namespace gl::dist::testing
