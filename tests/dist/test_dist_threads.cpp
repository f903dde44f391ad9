// The distribution layer on the thread backend: collectives and their byte counts,
// failures (a dead, a missing and a deadlocked worker), DP and DDP equivalence, the
// sampler and the cost model. The same collective and training checks run under mpirun
// in test_dist_mpi.cpp.
#include <gtest/gtest.h>
#include <pthread.h>
#include <sched.h>

#include <chrono>
#include <set>
#include <thread>
#include <vector>

#include "dist/cost_model.hpp"
#include "dist/parallel_training.hpp"
#include "dist/thread_comm.hpp"
#include "dist_checks.hpp"
#include "parallel/thread_pool.hpp"
#include "testkit/timing.hpp"

namespace gl::dist {
namespace {

using testing::check_all_collectives;

// The CPUs the calling thread may run on.
std::size_t cpus_of_this_thread() {
    cpu_set_t set;
    CPU_ZERO(&set);
    return pthread_getaffinity_np(pthread_self(), sizeof(set), &set) == 0 ? CPU_COUNT(&set) : 0;
}

TEST(ThreadBackend, WorkersRunOnEveryCpuEvenWhenTheCallerIsPinned) {
    const int before = get_num_threads();
    set_num_threads(2);
    parallel_run(2, [](int) {});  // pins this (the main) thread to one CPU
    std::size_t process = 0;
    {
        UnpinnedScope all;
        process = cpus_of_this_thread();
    }
    std::vector<std::size_t> seen(2);
    run_threads(2, [&](Communicator& c) { seen[static_cast<std::size_t>(c.rank())] = cpus_of_this_thread(); }, 20.0);
    set_num_threads(before);
    for (std::size_t r = 0; r < seen.size(); ++r)
        EXPECT_EQ(seen[r], process) << "worker " << r << " was held to its creator's CPU: the workers would share it";
}

class ThreadCollectives : public ::testing::TestWithParam<int> {};

TEST_P(ThreadCollectives, EveryAlgorithmSumsExactlyAndSendsTheFormulaBytes) {
    run_threads(GetParam(), [](Communicator& c) { check_all_collectives(c); }, 20.0);
}

TEST_P(ThreadCollectives, DdpMatchesOneProcessOnTheGlobalBatch) {
    for (std::size_t bucket : {std::size_t{64}, std::size_t{1} << 20})
        for (bool overlap : {true, false})
            run_threads(GetParam(), [&](Communicator& c) { testing::check_ddp_equivalence(c, bucket, overlap); }, 20.0);
}

TEST_P(ThreadCollectives, DdpAccumulationEqualsALargerBatch) {
    run_threads(GetParam(), [](Communicator& c) { testing::check_ddp_accumulation(c, 3); }, 20.0);
}

TEST_P(ThreadCollectives, DataParallelMatchesOneProcess) {
    run_threads(GetParam(), [](Communicator& c) { testing::check_dp_equivalence(c); }, 20.0);
}

INSTANTIATE_TEST_SUITE_P(Workers, ThreadCollectives, ::testing::Values(1, 2, 3, 4, 5),
                         [](const auto& info) { return "N" + std::to_string(info.param); });

TEST(ThreadBackend, OneCopyPerMessageAndCountersOnBothSides) {
    run_threads(2, [](Communicator& c) {
        std::vector<int> v(1000, c.rank());
        if (c.rank() == 0) c.send(v.data(), v.size() * sizeof(int), 1);
        else c.recv(v.data(), v.size() * sizeof(int), 0);
        EXPECT_EQ(v, std::vector<int>(1000, 0));
        EXPECT_EQ(c.rank() == 0 ? c.stats().bytes_sent : c.stats().bytes_received, 4000u);
    });
}

TEST(ThreadBackend, SizeMismatchIsReportedOnBothSides) {
    try {
        run_threads(2, [](Communicator& c) {
            std::vector<char> v(c.rank() == 0 ? 10 : 12);
            if (c.rank() == 0) c.send(v.data(), v.size(), 1);
            else c.recv(v.data(), v.size(), 0);
        }, 5.0);
        FAIL() << "a size mismatch went unnoticed";
    } catch (const CommError& e) {
        EXPECT_NE(std::string(e.what()).find("disagree on the message size"), std::string::npos) << e.what();
    }
}

// ---- Failures: never hang --------------------------------------------------------------

using testkit::seconds_since;

TEST(ThreadFailures, AWorkerThatDiesMakesTheOthersFailAtOnce) {
    const auto start = std::chrono::steady_clock::now();
    try {
        run_threads(4, [](Communicator& c) {
            if (c.rank() == 2) throw Error("simulated crash of worker 2");
            std::vector<float> v(1000, 1.0f);
            allreduce_ring(c, v.data(), v.size(), DType::Float32);
        }, 30.0);
        FAIL() << "the group finished although worker 2 died";
    } catch (const Error& e) {
        EXPECT_EQ(std::string(e.what()), "rank 2: simulated crash of worker 2") << "the root cause is reported";
    }
    EXPECT_LT(seconds_since(start), 10.0) << "peers of a dead worker must not wait for the 30 s timeout";
}

TEST(ThreadFailures, AWorkerThatNeverArrivesTimesOut) {
    const auto start = std::chrono::steady_clock::now();
    try {
        run_threads(3, [](Communicator& c) {
            if (c.rank() == 1) {  // alive, but busy elsewhere for longer than the timeout
                std::this_thread::sleep_for(std::chrono::milliseconds(1500));
                return;
            }
            std::vector<float> v(100, 1.0f);
            allreduce_ring(c, v.data(), v.size(), DType::Float32);
        }, 0.3);
        FAIL() << "the group finished although worker 1 never joined";
    } catch (const CommError& e) {
        const std::string m = e.what();
        EXPECT_NE(m.find("within 0.3 s"), std::string::npos) << m;
        EXPECT_NE(m.find("rank 1"), std::string::npos) << m;
    }
    EXPECT_LT(seconds_since(start), 10.0);
}

TEST(ThreadFailures, EveryRankSendingFirstIsADeadlockReportedWithinTheTimeout) {
    const auto start = std::chrono::steady_clock::now();
    try {
        run_threads(3, [](Communicator& c) {
            float out = 1, in = 0;
            c.send(&out, sizeof out, (c.rank() + 1) % 3);  // synchronous: nobody receives
            c.recv(&in, sizeof in, (c.rank() + 2) % 3);
        }, 0.3);
        FAIL() << "a ring of blocking sends cannot complete";
    } catch (const CommError& e) {
        EXPECT_NE(std::string(e.what()).find("deadlocked"), std::string::npos) << e.what();
    }
    EXPECT_LT(seconds_since(start), 10.0);
}

// ---- DistributedSampler (DP-4) -------------------------------------------------------------

TEST(DistributedSampler, EvenSplitEachSampleOncePerEpochShuffledBySeedAndEpoch) {
    for (std::size_t n : {1u, 2u, 3u, 4u, 7u})
        for (std::size_t size : {1u, 5u, 64u, 101u}) {
            std::multiset<std::size_t> seen;
            for (std::size_t r = 0; r < n; ++r) {
                const DistributedSampler s(n, r, true, 9);
                const auto idx = s.indices(size, 3);
                EXPECT_EQ(idx.size(), (size + n - 1) / n) << "equal shares";
                EXPECT_EQ(idx.size(), s.num_indices(size));
                seen.insert(idx.begin(), idx.end());
            }
            for (std::size_t i = 0; i < size; ++i) EXPECT_GE(seen.count(i), 1u) << "example " << i << " skipped";
            EXPECT_EQ(seen.size(), (size + n - 1) / n * n) << "only the padding repeats";
            if (size >= n) {
                std::set<std::size_t> unique(seen.begin(), seen.end());
                EXPECT_EQ(unique.size(), size);
            }
        }
    const DistributedSampler a(2, 0, true, 1), b(2, 0, true, 2);
    EXPECT_EQ(a.indices(50, 0), a.indices(50, 0)) << "same seed and epoch, same order";
    EXPECT_NE(a.indices(50, 0), a.indices(50, 1)) << "each epoch its own order";
    EXPECT_NE(a.indices(50, 0), b.indices(50, 0)) << "each seed its own order";
    EXPECT_EQ(DistributedSampler(3, 1, false).indices(7, 0), (std::vector<std::size_t>{1, 4, 0}));
    EXPECT_EQ(DistributedSampler(3, 2, false, 0, true).indices(7, 0), (std::vector<std::size_t>{2, 5}));
}

// ---- The training loop -------------------------------------------------------------------

TEST(ParallelTraining, DpAndDdpTrainTheSameModelAsOneProcess) {
    const training::Blobs blobs = training::make_blobs(96, 8, 5);
    auto data = std::make_shared<TensorDataset>(blobs.x, blobs.y, 2);
    ParallelFitOptions o;
    o.fit.epochs = 2;
    o.fit.batch_size = 12;
    o.fit.lr = 0.1;
    o.fit.optimizer = "sgd";
    o.fit.seed = 3;
    std::vector<double> losses;
    for (const char* mode : {"dp", "ddp"}) {
        o.parallel = mode;
        run_threads(3, [&](Communicator& c) {
            const auto reports = fit_parallel(c, [] { return testing::small_net(11); }, data, nullptr, o);
            ASSERT_EQ(reports.size(), 2u);
            if (c.rank() == 0) losses.push_back(reports.back().train_loss);
        }, 20.0);
    }
    ASSERT_EQ(losses.size(), 2u);
    EXPECT_LT(losses[0], 0.7);
    EXPECT_LT(losses[1], 0.7);
}

// ---- Cost model ------------------------------------------------------------------------------

TEST(CostModel, FitRecoversTheCostsThatMadeTheTimes) {
    const CostModel truth{2e-6, 1e-10, 3e-11};
    std::vector<CostSample> samples;
    for (auto algo : {AllReduceAlgo::ReduceBroadcast, AllReduceAlgo::RecursiveDoubling, AllReduceAlgo::Ring})
        for (int n : {2, 3, 4})
            for (double bytes : {1e3, 1e6, 6.4e7}) samples.push_back({algo, n, bytes, predict_seconds(truth, algo, bytes, n)});
    const CostModel fit = fit_cost_model(samples);
    EXPECT_NEAR(fit.alpha_s / truth.alpha_s, 1.0, 1e-6);
    EXPECT_NEAR(fit.beta_s_per_byte / truth.beta_s_per_byte, 1.0, 1e-6);
    EXPECT_NEAR(fit.gamma_s_per_byte / truth.gamma_s_per_byte, 1.0, 1e-6);
    // The ring's bandwidth term is bounded by 2S; recursive doubling's grows with log N.
    const double s = 1e8;
    EXPECT_LT(allreduce_cost_terms(AllReduceAlgo::Ring, s, 1024).bytes, 2 * s);
    EXPECT_EQ(allreduce_cost_terms(AllReduceAlgo::RecursiveDoubling, s, 1024).bytes, 10 * s);
}

TEST(Buckets, ReverseOrderClosedAtTheTargetSizeNeverSplit) {
    EXPECT_EQ(assign_buckets({100, 10, 100, 10}, 50),
              (std::vector<std::vector<std::size_t>>{{3, 2}, {1, 0}}));
    EXPECT_EQ(assign_buckets({4, 4, 4}, 1000), (std::vector<std::vector<std::size_t>>{{2, 1, 0}}));
    EXPECT_EQ(assign_buckets({4, 4, 4}, 1), (std::vector<std::vector<std::size_t>>{{2}, {1}, {0}}));
}

}  // namespace
}  // namespace gl::dist
