// Lab 08 graded tests: the ring all-reduce, DDP's bucketing, the distributed sampler.
// Points per test are in labs/08-data-parallel/rubric.json. The workers are threads of
// this process (the thread backend), whose sends are synchronous: a ring in which every
// rank sends before it receives deadlocks, and the communicator reports it after
// kTimeout seconds instead of hanging. One test runs your ring under mpirun as well.
//
// The student's code is called only inside graded::student (graded.hpp), around whole
// multi-worker runs (never from the workers, whose order varies): each run returns what
// every rank ended with (buffers, counters, trained weights), and the checks, in this
// program built from the reference when the grader checks, compare them with exact sums,
// the formulas and one process trained the same way. Byte and message counts are what the
// communicator counted inside the student's process.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <unistd.h>

#include "../dist/dist_checks.hpp"
#include "dist/mpi_comm.hpp"
#include "dist/parallel_training.hpp"
#include "dist/flat_params.hpp"
#include "dist/thread_comm.hpp"
#include "graded.hpp"
#include "per_rank.hpp"

namespace gl::dist {
namespace {

constexpr double kTimeout = 2.0;  // seconds a rank waits for a peer before it reports

// Runs fn(comm) on n worker threads, in the student's code, and returns each rank's result
// (rank order); a deadlock, reported by the communicator, fails the test with a hint.
template <class T, class Fn>
std::optional<std::vector<T>> per_rank(const std::string& key, int n, Fn fn) {
    return testing::per_rank<T>(key, n, fn, kTimeout,
                                "in a ring every rank sends and receives in the same step; use comm.sendrecv, never "
                                "send() then recv(), and make sure every rank runs the same number of steps.");
}

const std::size_t kCounts[] = {1, 2, 3, 7, 64, 1000, 1001, 4099, 65536, 100003};

// ---- Task 1: ring all-reduce ------------------------------------------------------------

TEST(Lab08, RingAllReduceSumsExactly) {
    for (int n = 2; n <= 5; ++n) {
        // Per rank: the ring's float32 result for each count, then its float64 one.
        using Result = std::pair<std::vector<std::vector<float>>, std::vector<double>>;
        const auto ring = per_rank<Result>("ring", n, [](Communicator& c) {
            Result out;
            for (std::size_t count : kCounts) {
                auto mine = testing::filled<float>(c.rank(), count);
                allreduce_ring(c, mine.data(), count, DType::Float32);
                out.first.push_back(mine);
            }
            out.second = testing::filled<double>(c.rank(), 1001);
            allreduce_ring(c, out.second.data(), out.second.size(), DType::Float64);
            return out;
        });
        if (!ring) return;
        // Another algorithm, the framework's, on the same buffers.
        std::vector<std::vector<std::vector<float>>> other(static_cast<std::size_t>(n));
        run_threads(n, [&](Communicator& c) {
            for (std::size_t count : kCounts) {
                auto v = testing::filled<float>(c.rank(), count);
                allreduce_reduce_broadcast(c, v.data(), count, DType::Float32);
                other[static_cast<std::size_t>(c.rank())].push_back(v);
            }
        }, kTimeout);
        for (int r = 0; r < n; ++r) {
            const Result& got = (*ring)[static_cast<std::size_t>(r)];
            ASSERT_EQ(got.first.size(), std::size(kCounts));
            for (std::size_t k = 0; k < std::size(kCounts); ++k) {
                const auto& mine = got.first[k];
                const std::size_t count = kCounts[k];
                ASSERT_EQ(mine.size(), count) << "rank " << r << ": the buffer changed its size";
                std::size_t wrong = 0;
                for (std::size_t i = 0; i < count; ++i)
                    wrong += mine[i] != static_cast<float>(testing::expected_sum(n, i));
                ASSERT_EQ(wrong, 0u) << "rank " << r << " of " << n << ", " << count
                                     << " elements: that many differ from the sum over all ranks";
                ASSERT_TRUE(mine == other[static_cast<std::size_t>(r)][k])
                    << "the ring and reduce+broadcast disagree (" << count << " elements)";
            }
            ASSERT_EQ(got.second.size(), 1001u);
            for (std::size_t i = 0; i < got.second.size(); ++i)
                ASSERT_EQ(got.second[i], testing::expected_sum(n, i)) << "float64";
        }
    }
}

TEST(Lab08, RingSendsTheFormulaBytes) {
    for (int n = 2; n <= 5; ++n) {
        // Per rank and count: the bytes and the messages the rank sent.
        using Sent = std::vector<std::pair<std::uint64_t, std::uint64_t>>;
        const auto sent = per_rank<Sent>("sent", n, [](Communicator& c) {
            Sent out;
            for (std::size_t count : kCounts) {
                auto v = testing::filled<float>(c.rank(), count);
                c.reset_stats();
                allreduce_ring(c, v.data(), count, DType::Float32);
                out.emplace_back(c.stats().bytes_sent, c.stats().messages_sent);
            }
            return out;
        });
        if (!sent) return;
        for (int r = 0; r < n; ++r) {
            const Sent& s = (*sent)[static_cast<std::size_t>(r)];
            ASSERT_EQ(s.size(), std::size(kCounts));
            for (std::size_t k = 0; k < s.size(); ++k) {
                const std::size_t count = kCounts[k];
                const auto [bytes_sent, messages_sent] = s[k];
                ASSERT_EQ(bytes_sent, allreduce_bytes_sent(AllReduceAlgo::Ring, count, sizeof(float), n, r))
                    << "rank " << r << " of " << n << ", " << count << " elements: the ring sends every chunk but "
                    << "its own in the reduce-scatter, and every chunk but its right neighbour's in the all-gather";
                ASSERT_EQ(messages_sent, 2u * static_cast<unsigned>(n - 1)) << "2(N-1) messages per rank";
                if (count % static_cast<std::size_t>(n) == 0) {
                    ASSERT_EQ(bytes_sent * static_cast<std::uint64_t>(n),
                              2u * static_cast<std::uint64_t>(n - 1) * count * sizeof(float))
                        << "with N dividing the buffer, exactly 2(N-1)/N of it per rank";
                }
            }
        }
    }
}

// Runs under mpirun (started by the test below): your ring next to MPI_Allreduce. Each
// rank writes its ring's results (the float32 buffer per count) and MPI_Allreduce's to
// GRADLAB_MPI_RESULTS/rankR, for the test below to record.
TEST(Lab08Mpi, DISABLED_RingEqualsMpiAllreduce) {
    Communicator& c = MpiCommunicator::world();
    c.set_timeout_s(kTimeout);
    std::vector<std::vector<float>> ring, library;
    for (std::size_t count : kCounts) {
        auto mine = testing::filled<float>(c.rank(), count);
        auto theirs = mine;
        allreduce_ring(c, mine.data(), count, DType::Float32);
        c.library_all_reduce(theirs.data(), count, DType::Float32);
        EXPECT_TRUE(mine == theirs) << "your ring differs from MPI_Allreduce for " << count << " elements on rank "
                                    << c.rank() << " of " << c.size();
        ring.push_back(mine);
        library.push_back(theirs);
    }
    if (const char* dir = std::getenv("GRADLAB_MPI_RESULTS")) {
        graded::Writer w;
        graded::Codec<std::vector<std::vector<float>>>::write(w, ring);
        graded::Codec<std::vector<std::vector<float>>>::write(w, library);
        std::ofstream(std::filesystem::path(dir) / ("rank" + std::to_string(c.rank())), std::ios::binary)
            << w.bytes();
    }
}

// The ring and MPI_Allreduce results of each rank of `mpirun -np @p np` (the test above),
// or the reason there are none.
using MpiRank = std::pair<std::vector<std::vector<float>>, std::vector<std::vector<float>>>;
std::pair<std::vector<MpiRank>, std::string> run_under_mpirun(int np) {
    return testing::run_under_mpirun<MpiRank>(np, "Lab08Mpi.*");
}

TEST(Lab08, RingEqualsMpiAllreduce) {
    ASSERT_TRUE(mpi_available()) << "this build has no MPI: apt-get install libopenmpi-dev openmpi-bin, reconfigure";
    for (const int np : {2, 4}) {
        const auto [ranks, problem] =
            graded::student<std::pair<std::vector<MpiRank>, std::string>>("mpirun", [&] { return run_under_mpirun(np); });
        ASSERT_EQ(problem, "");
        ASSERT_EQ(ranks.size(), static_cast<std::size_t>(np));
        for (int r = 0; r < np; ++r) {
            const auto& [ring, library] = ranks[static_cast<std::size_t>(r)];
            ASSERT_EQ(ring.size(), std::size(kCounts));
            ASSERT_EQ(library.size(), std::size(kCounts));
            for (std::size_t k = 0; k < std::size(kCounts); ++k) {
                ASSERT_EQ(ring[k].size(), kCounts[k]);
                for (std::size_t i = 0; i < kCounts[k]; ++i)
                    ASSERT_EQ(ring[k][i], static_cast<float>(testing::expected_sum(np, i)))
                        << "rank " << r << " of " << np << ", " << kCounts[k] << " elements: element " << i
                        << " is not the sum over all ranks";
                EXPECT_TRUE(ring[k] == library[k]) << "your ring differs from MPI_Allreduce for " << kCounts[k]
                                                   << " elements on rank " << r << " of " << np;
            }
        }
    }
}

// ---- Task 2: DDP's bucketing -----------------------------------------------------------

TEST(Lab08, BucketsReverseOrderClosedAtTheTargetNeverSplit) {
    using Buckets = std::vector<std::vector<std::size_t>>;
    const auto assign_buckets = [](const std::vector<std::size_t>& bytes, std::size_t target) {
        return graded::student<Buckets>("assign_buckets", [&] { return dist::assign_buckets(bytes, target); });
    };
    EXPECT_EQ(assign_buckets({100, 10, 100, 10}, 50), (Buckets{{3, 2}, {1, 0}}))
        << "walk from the last parameter; close a bucket once it holds >= bucket_bytes";
    EXPECT_EQ(assign_buckets({4, 4, 4}, 1000), (Buckets{{2, 1, 0}})) << "a partly filled last bucket is kept";
    EXPECT_EQ(assign_buckets({4, 4, 4}, 1), (Buckets{{2}, {1}, {0}})) << "a big parameter makes a bucket of its own";
    EXPECT_EQ(assign_buckets({8, 8, 8, 8, 8}, 16), (Buckets{{4, 3}, {2, 1}, {0}}));
    EXPECT_TRUE(assign_buckets({}, 16).empty()) << "no parameters, no buckets";
}

// What a DDP run leaves on a rank: its parameters and the DDP counters (synced backwards,
// all-reduces, buckets, buckets launched during backward), plus the bytes the rank sent
// before, during the no_sync backwards and after (for the accumulation run).
using DdpRank = std::tuple<std::vector<Tensor>, std::vector<std::uint64_t>, std::vector<std::uint64_t>>;

std::vector<std::uint64_t> counters(const DistributedDataParallel& ddp) {
    const DdpStats s = ddp.stats();
    return {s.synced_backwards, s.allreduces, s.buckets, s.launched_before_last};
}
std::vector<Tensor> copies(const std::vector<Tensor>& params) {
    std::vector<Tensor> out;
    for (const Tensor& p : params) out.push_back(p.detach().clone());
    return out;
}

TEST(Lab08, DdpMatchesOneProcess) {
    const std::int64_t local = 6;
    for (int n : {1, 2, 3, 4})
        for (std::size_t bucket : {std::size_t{64}, std::size_t{1} << 20})
            for (bool overlap : {true, false}) {
                std::vector<Batch> batches;
                for (int s = 0; s < 4; ++s) batches.push_back(testing::global_batch(local * n, 100 + static_cast<std::uint64_t>(s)));
                const auto ranks = per_rank<DdpRank>("ddp", n, [&](Communicator& c) {
                    // Replicas start from different weights: DDP's broadcast must fix that.
                    auto net = testing::small_net(c.rank() == 0 ? 11 : 1000 + static_cast<std::uint64_t>(c.rank()));
                    DistributedDataParallel ddp(net, c, {.bucket_bytes = bucket, .algo = AllReduceAlgo::ReduceBroadcast,
                                                         .overlap = overlap});
                    optim::SGD opt(net->parameters(), 0.5);
                    for (const Batch& b : batches) {
                        const Batch mine = testing::rows_of(b, local * c.rank(), local);
                        opt.zero_grad();
                        cross_entropy(ddp.forward(mine.inputs), mine.targets).backward();
                        opt.step();
                    }
                    return DdpRank{copies(net->parameters()), counters(ddp), {}};
                });
                if (!ranks) return;
                const auto ref = testing::reference_training(batches, 0.5);
                for (int r = 0; r < n; ++r) {
                    const auto& [params, stats, bytes] = (*ranks)[static_cast<std::size_t>(r)];
                    ASSERT_EQ(params.size(), ref->parameters().size());
                    ASSERT_EQ(stats.size(), 4u);
                    EXPECT_LT(max_abs_difference(params, ref->parameters()), testing::kTolerance)
                        << "DDP on " << n << " ranks (rank " << r << ", buckets of " << bucket << " bytes)";
                    EXPECT_EQ(stats[0], batches.size());
                    EXPECT_EQ(stats[1], batches.size() * stats[2]);
                    if (stats[2] > 1) {
                        EXPECT_GT(stats[3], 0u) << "no bucket was launched while backward was running";
                    }
                }
                if (HasFailure()) return;
            }
}

TEST(Lab08, DdpNoSyncAccumulation) {
    const int k = 3;
    const std::int64_t micro = 3;
    for (int n : {1, 2, 4}) {
        const Batch global = testing::global_batch(micro * k * n, 7);
        const auto ranks = per_rank<DdpRank>("no_sync", n, [&](Communicator& c) {
            auto net = testing::small_net(11);
            DistributedDataParallel ddp(net, c, {.bucket_bytes = 256, .algo = AllReduceAlgo::ReduceBroadcast});
            optim::SGD opt(net->parameters(), 0.5);
            opt.zero_grad();
            std::vector<std::uint64_t> bytes{c.stats().bytes_sent};
            for (int m = 0; m < k; ++m) {
                // Micro-batch m of every rank together is a contiguous block of the global batch.
                const Batch mb = testing::rows_of(global, (static_cast<std::int64_t>(m) * n + c.rank()) * micro, micro);
                const Tensor loss = cross_entropy(ddp.forward(mb.inputs), mb.targets) * (1.0 / k);
                if (m + 1 < k) {
                    auto guard = ddp.no_sync();
                    loss.backward();
                } else {
                    loss.backward();
                }
                bytes.push_back(c.stats().bytes_sent);
            }
            opt.step();
            return DdpRank{copies(net->parameters()), counters(ddp), bytes};
        });
        if (!ranks) return;
        const auto ref = testing::reference_training({global}, 0.5);
        for (int r = 0; r < n; ++r) {
            const auto& [params, stats, bytes] = (*ranks)[static_cast<std::size_t>(r)];
            ASSERT_EQ(stats.size(), 4u);
            ASSERT_EQ(bytes.size(), static_cast<std::size_t>(k + 1));
            for (int m = 1; m < k; ++m) EXPECT_EQ(bytes[m], bytes[0]) << "a backward under no_sync communicated";
            EXPECT_EQ(stats[0], 1u) << "only the last micro-batch synchronises";
            if (n > 1) {
                EXPECT_GT(bytes[k], bytes[0]) << "the last backward did not synchronise";
            }
            ASSERT_EQ(params.size(), ref->parameters().size());
            EXPECT_LT(max_abs_difference(params, ref->parameters()), testing::kTolerance)
                << "accumulating " << k << " micro-batches on " << n << " ranks";
        }
        if (HasFailure()) return;
    }
}

// ---- Task 3: the distributed sampler ----------------------------------------------------

// The student's DistributedSampler(n, rank, shuffle, seed, drop_last).indices(size, epoch).
std::vector<std::size_t> sampled(std::size_t n, std::size_t rank, bool shuffle, std::uint64_t seed, bool drop_last,
                                 std::size_t size, std::uint64_t epoch) {
    return graded::student<std::vector<std::size_t>>("indices", [&] {
        return DistributedSampler(n, rank, shuffle, seed, drop_last).indices(size, epoch);
    });
}

TEST(Lab08, DistributedSamplerSplitsEvenlyAndCoversEverySample) {
    for (std::size_t n : {1u, 2u, 3u, 4u, 7u})
        for (std::size_t size : {1u, 5u, 64u, 101u}) {
            std::multiset<std::size_t> seen;
            for (std::size_t r = 0; r < n; ++r) {
                const auto idx = sampled(n, r, true, 9, false, size, 3);
                ASSERT_EQ(idx.size(), (size + n - 1) / n) << n << " workers, " << size << " samples: rank " << r
                                                          << " must get ceil(size / N)";
                seen.insert(idx.begin(), idx.end());
            }
            for (std::size_t i = 0; i < size; ++i)
                ASSERT_GE(seen.count(i), 1u) << "sample " << i << " of " << size << " is never visited by " << n
                                             << " workers";
            if (size >= n) {
                ASSERT_EQ(std::set<std::size_t>(seen.begin(), seen.end()).size(), size);
                ASSERT_LT(seen.size() - size, n) << "padding repeats fewer than N samples";
            }
        }
    EXPECT_EQ(sampled(3, 1, false, 0, false, 7, 0), (std::vector<std::size_t>{1, 4, 0}))
        << "no shuffle: order 0..6, padded with 0, 1; rank 1 takes positions 1, 4, 7";
    EXPECT_EQ(sampled(3, 2, false, 0, true, 7, 0), (std::vector<std::size_t>{2, 5}))
        << "drop_last: 6 positions, rank 2 takes 2 and 5";
}

TEST(Lab08, DistributedSamplerShufflesBySeedAndEpochTheSameOnEveryRank) {
    const auto a = [](std::uint64_t epoch) { return sampled(2, 0, true, 1, false, 50, epoch); };
    EXPECT_EQ(a(0), a(0)) << "same seed and epoch: same order";
    EXPECT_NE(a(0), a(1)) << "each epoch its own order";
    EXPECT_NE(a(0), sampled(2, 0, true, 2, false, 50, 0)) << "each seed its own order";
    // The ranks cut one shared order: together they are a permutation.
    std::set<std::size_t> both;
    for (auto i : a(4)) both.insert(i);
    for (auto i : sampled(2, 1, true, 1, false, 50, 4)) both.insert(i);
    EXPECT_EQ(both.size(), 50u) << "ranks must draw the same order (seeded by seed and epoch only, not rank)";
    const auto epoch2 = a(2);
    ASSERT_FALSE(epoch2.empty());
    EXPECT_EQ(epoch2[0], RandomSampler(1).indices(50, 2)[0]) << "shuffle exactly as RandomSampler";
}

TEST(Lab08, DdpTrainsWithTheSampler) {
    const training::Blobs blobs = training::make_blobs(96, 8, 5);
    auto data = std::make_shared<TensorDataset>(blobs.x, blobs.y, 2);
    ParallelFitOptions o;
    o.fit.epochs = 3;
    o.fit.batch_size = 12;
    o.fit.lr = 0.1;
    o.fit.optimizer = "sgd";
    o.fit.seed = 3;
    o.ddp.algo = AllReduceAlgo::ReduceBroadcast;
    // Rank 0's trained weights are recorded; the loss on the blobs is computed here.
    const auto ranks = per_rank<std::vector<Tensor>>("trained", 3, [&](Communicator& c) {
        std::shared_ptr<nn::Module> net;
        fit_parallel(c, [&] { return net = testing::small_net(11); }, data, nullptr, o);
        return copies(net->parameters());
    });
    ASSERT_TRUE(ranks.has_value());
    const auto net = testing::small_net(11);
    const auto params = net->parameters();
    const auto& trained = (*ranks)[0];
    ASSERT_EQ(trained.size(), params.size());
    for (std::size_t i = 0; i < params.size(); ++i) {
        ASSERT_EQ(trained[i].shape(), params[i].shape());
        Tensor(params[i]).set_data(trained[i]);
    }
    const double loss = cross_entropy((*net)(blobs.x), blobs.y).item();
    EXPECT_LT(loss, 0.5) << "DDP on 3 workers with your sampler should learn two blobs";
}

}  // namespace
}  // namespace gl::dist
