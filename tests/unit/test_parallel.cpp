// Unit tests: the intra-op thread pool and the thread-count control.
#include <gtest/gtest.h>

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

}  // namespace
}  // namespace gl
