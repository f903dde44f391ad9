// Unit tests: the intra-op thread pool and the thread-count control.
#include <gtest/gtest.h>

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "base/error.hpp"
#include "parallel/thread_pool.hpp"

namespace gl {
namespace {

class Threads : public ::testing::Test {
protected:
    void SetUp() override { before_ = get_num_threads(); }
    void TearDown() override { set_num_threads(before_); }
    int before_ = 1;
};

TEST_F(Threads, DefaultIsAtLeastOneAndSetNumThreadsIsHonoured) {
    EXPECT_GE(get_num_threads(), 1);
    set_num_threads(3);
    EXPECT_EQ(get_num_threads(), 3);
    EXPECT_THROW(set_num_threads(0), Error);
}

TEST_F(Threads, ParallelRunRunsEveryShareOnItsOwnThread) {
    for (int n : {1, 2, 4, 7}) {
        set_num_threads(n);
        std::mutex m;
        std::set<int> shares;
        std::set<std::thread::id> ids;
        parallel_run(n, [&](int t) {
            std::lock_guard lock(m);
            shares.insert(t);
            ids.insert(std::this_thread::get_id());
            EXPECT_EQ(in_parallel_region(), true);
        });
        EXPECT_EQ(static_cast<int>(shares.size()), n);
        EXPECT_EQ(static_cast<int>(ids.size()), n) << "each share runs on a thread of its own";
        EXPECT_FALSE(in_parallel_region());
    }
}

TEST_F(Threads, ParallelRunIsCappedByTheThreadCount) {
    set_num_threads(2);
    std::atomic<int> ran{0};
    parallel_run(5, [&](int t) {
        EXPECT_LT(t, 2);
        ++ran;
    });
    EXPECT_EQ(ran.load(), 2);
}

TEST_F(Threads, ParallelForCoversTheRangeOnce) {
    set_num_threads(3);
    std::vector<std::atomic<int>> hits(1001);
    parallel_for(1001, 10, [&](std::int64_t b, std::int64_t e) {
        for (std::int64_t i = b; i < e; ++i) ++hits[static_cast<std::size_t>(i)];
    });
    for (const auto& h : hits) ASSERT_EQ(h.load(), 1);
}

TEST_F(Threads, NestedRegionsRunOnTheCallingThread) {
    set_num_threads(2);
    std::atomic<int> inner{0};
    parallel_run(2, [&](int) {
        const auto me = std::this_thread::get_id();
        parallel_run(2, [&](int) {
            EXPECT_EQ(std::this_thread::get_id(), me);
            ++inner;
        });
    });
    EXPECT_EQ(inner.load(), 4);
}

TEST_F(Threads, AnExceptionInAShareReachesTheCaller) {
    set_num_threads(2);
    EXPECT_THROW(parallel_run(2, [](int t) { check(t != 1, "share 1 fails"); }), Error);
    std::atomic<int> ran{0};
    parallel_run(2, [&](int) { ++ran; });  // the pool still works
    EXPECT_EQ(ran.load(), 2);
}

// The CPUs the calling thread may run on.
std::set<int> my_cpus() {
    cpu_set_t set;
    CPU_ZERO(&set);
    std::set<int> cpus;
    if (pthread_getaffinity_np(pthread_self(), sizeof(set), &set) == 0)
        for (int c = 0; c < CPU_SETSIZE; ++c)
            if (CPU_ISSET(c, &set)) cpus.insert(c);
    return cpus;
}

TEST_F(Threads, APoolMadeAfterTheCallerWasPinnedStillSpreadsOverEveryCpu) {
    // The first region pins the caller to one CPU; a pool made afterwards (the thread
    // count changed) must not take that one CPU for all the CPUs the process has.
    set_num_threads(2);
    parallel_run(2, [](int) {});
    set_num_threads(1);
    set_num_threads(2);
    std::set<int> seen[2];
    parallel_run(2, [&](int t) { seen[t] = my_cpus(); });
    ASSERT_EQ(seen[0].size(), 1u) << "the caller runs share 0 pinned to one CPU";
    ASSERT_EQ(seen[1].size(), 1u) << "a worker is pinned to one CPU";
    UnpinnedScope all;
    if (my_cpus().size() < 2) GTEST_SKIP() << "this process may use one CPU only: nothing to spread over";
    EXPECT_NE(*seen[0].begin(), *seen[1].begin()) << "the two shares were pinned to the same CPU";
}

TEST_F(Threads, UnpinnedScopeWidensTheCallerAndRestoresIt) {
    set_num_threads(2);
    parallel_run(2, [](int) {});  // pins the caller
    const std::set<int> pinned = my_cpus();
    ASSERT_EQ(pinned.size(), 1u);
    {
        UnpinnedScope all;
        const std::set<int> wide = my_cpus();
        EXPECT_TRUE(std::includes(wide.begin(), wide.end(), pinned.begin(), pinned.end()));
        if (std::thread::hardware_concurrency() > 1 && wide.size() == 1)
            ADD_FAILURE() << "the scope left the caller on one CPU although the machine has more";
        std::set<int> child;
        std::thread([&] { child = my_cpus(); }).join();
        EXPECT_EQ(child, wide) << "a thread started inside the scope (a peer library's) inherits the wide set";
    }
    EXPECT_EQ(my_cpus(), pinned) << "the caller's pinning is restored";
}

TEST_F(Threads, OnlyTheFirstCallerIsPinnedAndOtherThreadsStayFree) {
    set_num_threads(2);
    parallel_run(2, [](int) {});  // the main thread: pinned, the first caller in this process
    std::set<int> process;
    {
        UnpinnedScope all;
        process = my_cpus();
    }
    if (process.size() < 2) GTEST_SKIP() << "this process may use one CPU only: nothing to pin away from";
    std::set<int> inherited, released, after_region;
    std::thread([&] {
        inherited = my_cpus();
        release_inherited_pinning();
        released = my_cpus();
        parallel_run(2, [](int) {});
        after_region = my_cpus();
    }).join();
    EXPECT_EQ(inherited.size(), 1u) << "a raw thread inherits its pinned creator's one CPU";
    EXPECT_EQ(released, process) << "release_inherited_pinning gives the thread every CPU";
    EXPECT_EQ(after_region, process) << "a second thread that starts a region is not pinned by it";
}

}  // namespace
}  // namespace gl
