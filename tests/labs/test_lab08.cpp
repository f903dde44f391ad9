// Lab 08 graded tests: the ring all-reduce, DDP's bucketing, the distributed sampler.
// Points per test are in labs/08-data-parallel/rubric.json. The workers are threads of
// this process (the thread backend), whose sends are synchronous: a ring in which every
// rank sends before it receives deadlocks, and the communicator reports it after
// kTimeout seconds instead of hanging. One test runs your ring under mpirun as well.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <set>

#include "../dist/dist_checks.hpp"
#include "dist/mpi_comm.hpp"
#include "dist/parallel_training.hpp"
#include "dist/thread_comm.hpp"

namespace gl::dist {
namespace {

constexpr double kTimeout = 2.0;  // seconds a rank waits for a peer before it reports

// Runs fn on n threads; a communication failure becomes one readable test failure.
template <class Fn>
void on_workers(int n, Fn fn) {
    try {
        run_threads(n, fn, kTimeout);
    } catch (const CommError& e) {
        FAIL() << "with " << n << " workers, your code deadlocked or a rank waited for a message that never came: "
               << e.what()
               << "\nHint: in a ring every rank sends and receives in the same step; use comm.sendrecv, never "
                  "send() then recv(), and make sure every rank runs the same number of steps.";
    }
}

const std::size_t kCounts[] = {1, 2, 3, 7, 64, 1000, 1001, 4099, 65536, 100003};

// ---- Task 1: ring all-reduce ------------------------------------------------------------

TEST(Lab08, RingAllReduceSumsExactly) {
    for (int n = 2; n <= 5; ++n) {
        on_workers(n, [](Communicator& c) {
            for (std::size_t count : kCounts) {
                auto mine = testing::filled<float>(c.rank(), count);
                auto other = mine;
                allreduce_ring(c, mine.data(), count, DType::Float32);
                allreduce_reduce_broadcast(c, other.data(), count, DType::Float32);  // a different algorithm
                std::size_t wrong = 0;
                for (std::size_t i = 0; i < count; ++i)
                    wrong += mine[i] != static_cast<float>(testing::expected_sum(c.size(), i));
                ASSERT_EQ(wrong, 0u) << "rank " << c.rank() << " of " << c.size() << ", " << count
                                     << " elements: that many differ from the sum over all ranks";
                ASSERT_TRUE(mine == other) << "the ring and reduce+broadcast disagree (" << count << " elements)";
            }
            auto d = testing::filled<double>(c.rank(), 1001);
            allreduce_ring(c, d.data(), d.size(), DType::Float64);
            for (std::size_t i = 0; i < d.size(); ++i) ASSERT_EQ(d[i], testing::expected_sum(c.size(), i)) << "float64";
        });
        if (HasFatalFailure()) return;
    }
}

TEST(Lab08, RingSendsTheFormulaBytes) {
    for (int n = 2; n <= 5; ++n) {
        on_workers(n, [](Communicator& c) {
            const int n = c.size(), r = c.rank();
            for (std::size_t count : kCounts) {
                auto v = testing::filled<float>(r, count);
                c.reset_stats();
                allreduce_ring(c, v.data(), count, DType::Float32);
                const CommStats s = c.stats();
                ASSERT_EQ(s.bytes_sent, allreduce_bytes_sent(AllReduceAlgo::Ring, count, sizeof(float), n, r))
                    << "rank " << r << " of " << n << ", " << count << " elements: the ring sends every chunk but "
                    << "its own in the reduce-scatter, and every chunk but its right neighbour's in the all-gather";
                ASSERT_EQ(s.messages_sent, 2u * static_cast<unsigned>(n - 1)) << "2(N-1) messages per rank";
                if (count % static_cast<std::size_t>(n) == 0) {
                    ASSERT_EQ(s.bytes_sent * static_cast<std::uint64_t>(n),
                              2u * static_cast<std::uint64_t>(n - 1) * count * sizeof(float))
                        << "with N dividing the buffer, exactly 2(N-1)/N of it per rank";
                }
            }
        });
        if (HasFatalFailure()) return;
    }
}

// Runs under mpirun (started by the test below): your ring next to MPI_Allreduce.
TEST(Lab08Mpi, DISABLED_RingEqualsMpiAllreduce) {
    Communicator& c = MpiCommunicator::world();
    c.set_timeout_s(kTimeout);
    for (std::size_t count : kCounts) {
        auto mine = testing::filled<float>(c.rank(), count);
        auto library = mine;
        allreduce_ring(c, mine.data(), count, DType::Float32);
        c.library_all_reduce(library.data(), count, DType::Float32);
        ASSERT_TRUE(mine == library) << "your ring differs from MPI_Allreduce for " << count << " elements on rank "
                                     << c.rank() << " of " << c.size();
    }
}

TEST(Lab08, RingEqualsMpiAllreduce) {
    ASSERT_TRUE(mpi_available()) << "this build has no MPI: apt-get install libopenmpi-dev openmpi-bin, reconfigure";
    const auto self = std::filesystem::read_symlink("/proc/self/exe");
    for (const char* np : {"2", "4"}) {
        // In a sanitizer build, OpenMPI's own allocations at exit are not this lab's leaks.
        const std::string cmd = "ASAN_OPTIONS=\"${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0\" timeout 90 mpirun "
                                "--oversubscribe --allow-run-as-root --bind-to none --mca btl self,vader -np " +
                                std::string(np) + " " + self.string() +
                                " --gtest_also_run_disabled_tests --gtest_filter='Lab08Mpi.*' --gtest_color=no 2>&1";
        FILE* pipe = popen(cmd.c_str(), "r");
        ASSERT_NE(pipe, nullptr) << "could not run mpirun";
        std::string out;
        std::array<char, 4096> buf{};
        while (std::fgets(buf.data(), buf.size(), pipe)) out += buf.data();
        const int status = pclose(pipe);
        std::erase_if(out, [](char ch) { return ch != '\n' && ch != '\t' && (ch < 32 || ch == 127); });  // XML-safe
        ASSERT_EQ(status, 0) << "mpirun -np " << np << " failed; its output:\n" << out;
    }
}

// ---- Task 2: DDP's bucketing -----------------------------------------------------------

TEST(Lab08, BucketsReverseOrderClosedAtTheTargetNeverSplit) {
    using Buckets = std::vector<std::vector<std::size_t>>;
    EXPECT_EQ(assign_buckets({100, 10, 100, 10}, 50), (Buckets{{3, 2}, {1, 0}}))
        << "walk from the last parameter; close a bucket once it holds >= bucket_bytes";
    EXPECT_EQ(assign_buckets({4, 4, 4}, 1000), (Buckets{{2, 1, 0}})) << "a partly filled last bucket is kept";
    EXPECT_EQ(assign_buckets({4, 4, 4}, 1), (Buckets{{2}, {1}, {0}})) << "a big parameter makes a bucket of its own";
    EXPECT_EQ(assign_buckets({8, 8, 8, 8, 8}, 16), (Buckets{{4, 3}, {2, 1}, {0}}));
    EXPECT_TRUE(assign_buckets({}, 16).empty()) << "no parameters, no buckets";
}

TEST(Lab08, DdpMatchesOneProcess) {
    for (int n : {1, 2, 3, 4})
        for (std::size_t bucket : {std::size_t{64}, std::size_t{1} << 20})
            for (bool overlap : {true, false}) {
                on_workers(n, [&](Communicator& c) {
                    testing::check_ddp_equivalence(c, bucket, overlap, AllReduceAlgo::ReduceBroadcast);
                });
                if (HasFailure()) return;
            }
}

TEST(Lab08, DdpNoSyncAccumulation) {
    for (int n : {1, 2, 4}) {
        on_workers(n, [](Communicator& c) { testing::check_ddp_accumulation(c, 3, AllReduceAlgo::ReduceBroadcast); });
        if (HasFailure()) return;
    }
}

// ---- Task 3: the distributed sampler ----------------------------------------------------

TEST(Lab08, DistributedSamplerSplitsEvenlyAndCoversEverySample) {
    for (std::size_t n : {1u, 2u, 3u, 4u, 7u})
        for (std::size_t size : {1u, 5u, 64u, 101u}) {
            std::multiset<std::size_t> seen;
            for (std::size_t r = 0; r < n; ++r) {
                const auto idx = DistributedSampler(n, r, true, 9).indices(size, 3);
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
    EXPECT_EQ(DistributedSampler(3, 1, false).indices(7, 0), (std::vector<std::size_t>{1, 4, 0}))
        << "no shuffle: order 0..6, padded with 0, 1; rank 1 takes positions 1, 4, 7";
    EXPECT_EQ(DistributedSampler(3, 2, false, 0, true).indices(7, 0), (std::vector<std::size_t>{2, 5}))
        << "drop_last: 6 positions, rank 2 takes 2 and 5";
}

TEST(Lab08, DistributedSamplerShufflesBySeedAndEpochTheSameOnEveryRank) {
    const DistributedSampler a(2, 0, true, 1), b(2, 0, true, 2), other_rank(2, 1, true, 1);
    EXPECT_EQ(a.indices(50, 0), a.indices(50, 0)) << "same seed and epoch: same order";
    EXPECT_NE(a.indices(50, 0), a.indices(50, 1)) << "each epoch its own order";
    EXPECT_NE(a.indices(50, 0), b.indices(50, 0)) << "each seed its own order";
    // The ranks cut one shared order: together they are a permutation.
    std::set<std::size_t> both;
    for (auto i : a.indices(50, 4)) both.insert(i);
    for (auto i : other_rank.indices(50, 4)) both.insert(i);
    EXPECT_EQ(both.size(), 50u) << "ranks must draw the same order (seeded by seed and epoch only, not rank)";
    EXPECT_EQ(a.indices(50, 2)[0], RandomSampler(1).indices(50, 2)[0]) << "shuffle exactly as RandomSampler";
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
    double loss = 1e9;
    on_workers(3, [&](Communicator& c) {
        const auto reports = fit_parallel(c, [] { return testing::small_net(11); }, data, nullptr, o);
        if (c.rank() == 0) loss = reports.back().train_loss;
    });
    EXPECT_LT(loss, 0.5) << "DDP on 3 workers with your sampler should learn two blobs";
}

}  // namespace
}  // namespace gl::dist
