// Lab 08 contract tests: the distributed sampler's exact positions and padding samples for random
// sizes (datasets smaller than the number of ranks too), with and without shuffling and drop_last;
// bucket assignment on random sizes with exact ties; the ring all-reduce on canary-guarded buffers
// through a communicator whose scratch buffers are guarded too, so a write past the buffer or past
// the scratch fails in a release build; DDP's launch counters after every backward. The student's
// code is called only through graded::student (graded.hpp), each call one small lambda that returns
// everything the checks read, so a checker that never loads it can decide.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>

#include "../dist/dist_checks.hpp"
#include "contract.hpp"
#include "graded.hpp"
#include "data/sampler.hpp"
#include "dist/parallel_training.hpp"
#include "dist/thread_comm.hpp"

namespace gl::dist {
namespace {

constexpr double kTimeout = 2.0;

template <class Fn>
void on_workers(int n, Fn fn) {
    try {
        run_threads(n, fn, kTimeout);
    } catch (const CommError& e) {
        FAIL() << "with " << n << " workers: " << e.what();
    }
}

// ---- the distributed sampler -----------------------------------------------------------

TEST(Lab08, ContractDistributedSamplerPositionsAndPadding) {
    Rng rng(81);
    for (int trial = 0; trial < 300; ++trial) {
        const auto n = static_cast<std::size_t>(labs::pick(rng, 1, 7));
        const auto size = static_cast<std::size_t>(labs::pick(rng, 1, 40));
        const bool shuffle = rng.below(3) != 0, drop_last = rng.below(4) == 0 && size >= n;
        const std::uint64_t seed = rng.below(1000);
        const auto epoch = static_cast<std::size_t>(rng.below(5));
        // The spec: the epoch's order, padded with its own first elements (wrapping) or
        // cut, then every n-th position from the rank's own.
        std::vector<std::size_t> order(size);
        if (shuffle) order = RandomSampler(seed).indices(size, epoch);
        else for (std::size_t i = 0; i < size; ++i) order[i] = i;
        const std::size_t total = drop_last ? size / n * n : (size + n - 1) / n * n;
        for (std::size_t i = 0; order.size() < total; ++i) order.push_back(order[i % size]);
        order.resize(total);
        for (std::size_t r = 0; r < n; ++r) {
            auto run = [&]() { return DistributedSampler(n, r, shuffle, seed, drop_last).indices(size, epoch); };
            const std::vector<std::size_t> got = graded::student<std::vector<std::size_t>>("indices", run);
            std::vector<std::size_t> want;
            for (std::size_t i = r; i < total; i += n) want.push_back(order[i]);
            ASSERT_EQ(got, want) << "rank " << r << " of " << n << ", " << size << " samples, shuffle " << shuffle
                                 << " (seed " << seed << ", epoch " << epoch << "), drop_last " << drop_last
                                 << ": rank r takes positions r, r + N, ... of the epoch's order padded with its "
                                    "first elements";
        }
    }
}

// ---- buckets ------------------------------------------------------------------------------

TEST(Lab08, ContractBucketsOnRandomSizesWithTies) {
    Rng rng(82);
    for (int trial = 0; trial < 300; ++trial) {
        std::vector<std::size_t> bytes(static_cast<std::size_t>(labs::pick(rng, 0, 12)));
        for (auto& b : bytes) b = static_cast<std::size_t>(labs::pick(rng, 1, 8)) * 4;
        // Half the time the target is exactly the size of the last few parameters: a tie.
        std::size_t target = static_cast<std::size_t>(labs::pick(rng, 1, 40));
        if (!bytes.empty() && trial % 2 == 0) {
            target = 0;
            for (std::size_t i = bytes.size(); i-- > bytes.size() - std::min<std::size_t>(bytes.size(), 1 + rng.below(3));)
                target += bytes[i];
        }
        auto run = [&]() { return assign_buckets(bytes, target); };
        const std::vector<std::vector<std::size_t>> got =
            graded::student<std::vector<std::vector<std::size_t>>>("assign_buckets", run);
        std::vector<std::vector<std::size_t>> want;
        std::vector<std::size_t> current;
        std::size_t filled = 0;
        for (std::size_t i = bytes.size(); i-- > 0;) {
            current.push_back(i);
            filled += bytes[i];
            if (filled >= target) want.push_back(current), current.clear(), filled = 0;
        }
        if (!current.empty()) want.push_back(current);
        std::string sizes;
        for (std::size_t b : bytes) sizes += std::to_string(b) + " ";
        ASSERT_EQ(got, want) << "parameter bytes [ " << sizes << "], bucket_bytes " << target
                             << ": from the last parameter, close a bucket as soon as it holds >= bucket_bytes";
    }
}

// ---- the ring all-reduce on guarded buffers ---------------------------------------------

// The rank's own communicator, but every buffer it allocates (the scratch the ring
// receives into) has a canary guard zone after it.
class GuardedComm final : public Communicator {
public:
    explicit GuardedComm(Communicator& inner) : inner_(inner) { set_timeout_s(inner.timeout_s()); }
    int rank() const override { return inner_.rank(); }
    int size() const override { return inner_.size(); }
    std::string backend() const override { return inner_.backend(); }
    std::shared_ptr<void> allocate(std::size_t bytes) const override {
        auto buffer = std::make_shared<labs::Guarded<unsigned char>>(bytes, 256);
        buffers_.push_back(buffer);
        return std::shared_ptr<void>(buffer, buffer->data());
    }
    /// "" when no buffer this communicator allocated was written past its end.
    std::string damage() const {
        for (const auto& b : buffers_)
            if (const std::string d = labs::guard_damage(b->all(), b->guard()); !d.empty()) return "scratch buffer: " + d;
        return "";
    }

protected:
    void do_send(const void* data, std::size_t bytes, int dest) override { inner_.send(data, bytes, dest); }
    void do_recv(void* data, std::size_t bytes, int src) override { inner_.recv(data, bytes, src); }
    void do_sendrecv(const void* send_data, std::size_t send_bytes, int dest, void* recv_data, std::size_t recv_bytes,
                     int src) override {
        inner_.sendrecv(send_data, send_bytes, dest, recv_data, recv_bytes, src);
    }

private:
    Communicator& inner_;
    mutable std::vector<std::shared_ptr<labs::Guarded<unsigned char>>> buffers_;
};

TEST(Lab08, ContractRingOnGuardedBuffers) {
    for (int n = 2; n <= 5; ++n) {
        on_workers(n, [](Communicator& c) {
            Rng rng(83);  // the same counts on every rank
            for (int trial = 0; trial < 12; ++trial) {
                GuardedComm guarded(c);
                const auto count = static_cast<std::size_t>(labs::pick(rng, 1, 3000));
                labs::Guarded<float> data(count);
                for (std::size_t i = 0; i < count; ++i) data[i] = testing::filled<float>(c.rank(), count)[i];
                auto run = [&]() -> std::pair<std::vector<float>, std::string> {
                    allreduce_ring(guarded, data.data(), count, DType::Float32);
                    return {data.all(), guarded.damage()};
                };
                const auto [got, damage] = graded::student<std::pair<std::vector<float>, std::string>>(
                    "allreduce_ring on rank " + std::to_string(c.rank()), run);
                ASSERT_EQ(damage, "") << "rank " << c.rank() << " of " << c.size() << ", " << count
                                                << " elements: a chunk was received into a scratch buffer too small "
                                                   "for it (the largest chunk is the last)";
                ASSERT_EQ(labs::guard_damage(got, data.guard()), "") << "rank " << c.rank() << ", " << count << " elements";
                for (std::size_t i = 0; i < count; ++i)
                    ASSERT_EQ(got[data.guard() + i], static_cast<float>(testing::expected_sum(c.size(), i)))
                        << "rank " << c.rank() << " of " << c.size() << ", " << count << " elements, element " << i;
            }
        });
        if (HasFatalFailure()) return;
    }
}

// ---- DDP's counters ------------------------------------------------------------------------

TEST(Lab08, ContractDdpLaunchCounters) {
    // Every backward launches each bucket once; the last launch can only come after the
    // last gradient, so at most buckets - 1 launches overlap with backward.
    for (int n : {1, 2, 3}) {
        on_workers(n, [](Communicator& c) {
            for (std::size_t bucket : {std::size_t{64}, std::size_t{300}, std::size_t{1} << 20}) {
                auto net = testing::small_net(11);
                DistributedDataParallel ddp(net, c, {.bucket_bytes = bucket, .algo = AllReduceAlgo::ReduceBroadcast});
                const Batch b = testing::global_batch(6, 5);
                auto run = [&](int steps) -> std::vector<double> {
                    std::vector<double> out;
                    for (int s = 0; s < steps; ++s) {
                        cross_entropy(ddp.forward(b.inputs), b.targets).backward();
                        const DdpStats st = ddp.stats();
                        out.insert(out.end(), {static_cast<double>(st.buckets), static_cast<double>(st.allreduces),
                                               static_cast<double>(st.launched_before_last)});
                    }
                    return out;
                };
                const std::vector<double> got =
                    graded::student<std::vector<double>>("DDP on rank " + std::to_string(c.rank()), [&] { return run(3); });
                for (int s = 0; s < 3; ++s) {
                    const double buckets = got[3 * s], allreduces = got[3 * s + 1], before_last = got[3 * s + 2];
                    const std::string where = "rank " + std::to_string(c.rank()) + ", buckets of " +
                                              std::to_string(bucket) + " bytes, after backward " + std::to_string(s + 1);
                    ASSERT_EQ(allreduces, buckets * (s + 1)) << where << ": each bucket launched once per backward";
                    ASSERT_LE(before_last, (buckets - 1) * (s + 1))
                        << where << ": the launch that follows the last gradient does not overlap with backward";
                }
            }
        });
        if (HasFatalFailure()) return;
    }
}

// y = (x B) A with A registered first: in backward A's gradient arrives first, so the
// bucket holding A (the last bucket: buckets are filled from the last parameter) is full
// before the first one. B is used as t(t(B)), so its gradient arrives as a strided view.
class OutOfOrderProduct final : public nn::Module {
public:
    OutOfOrderProduct(Tensor a, Tensor b) {
        a_ = register_parameter("a", std::move(a));
        b_ = register_parameter("b", std::move(b));
    }
    Tensor forward(const Tensor& x) override { return matmul(t(matmul(t(b_), t(x))), a_); }
    std::string describe() const override { return "OutOfOrderProduct"; }

private:
    Tensor a_, b_;
};

TEST(Lab08, ContractDdpGradientsOutOfBucketOrder) {
    // Each rank's own gradients, computed without DDP, for every rank's local batch; DDP
    // must leave their mean on every rank.
    constexpr std::int64_t kLocal = 4;
    for (int n : {2, 3}) {
        on_workers(n, [&](Communicator& c) {
            Rng rng(84);
            const Tensor a0 = rand_uniform({3, 3}, -1, 1, rng), b0 = rand_uniform({8, 3}, -1, 1, rng);
            const Batch global = testing::global_batch(kLocal * c.size(), 9);
            std::vector<float> mean(9 + 24, 0.0f);
            for (int r = 0; r < c.size(); ++r) {
                OutOfOrderProduct alone(a0.clone(), b0.clone());
                const Batch mine = testing::rows_of(global, kLocal * r, kLocal);
                cross_entropy(alone.forward(mine.inputs), mine.targets).backward();
                std::vector<float> g = alone.parameters()[0].grad().contiguous().to_vector<float>();
                for (float x : alone.parameters()[1].grad().contiguous().to_vector<float>()) g.push_back(x);
                for (std::size_t i = 0; i < g.size(); ++i) mean[i] += g[i] / static_cast<float>(c.size());
            }
            auto run = [&]() -> std::vector<float> {
                auto model = std::make_shared<OutOfOrderProduct>(a0.clone(), b0.clone());
                DistributedDataParallel ddp(model, c, {.bucket_bytes = 16, .algo = AllReduceAlgo::ReduceBroadcast});
                const Batch mine = testing::rows_of(global, kLocal * c.rank(), kLocal);
                cross_entropy(ddp.forward(mine.inputs), mine.targets).backward();
                std::vector<float> g = model->parameters()[0].grad().contiguous().to_vector<float>();
                for (float x : model->parameters()[1].grad().contiguous().to_vector<float>()) g.push_back(x);
                return g;
            };
            const std::vector<float> got =
                graded::student<std::vector<float>>("gradients on rank " + std::to_string(c.rank()), run);
            ASSERT_EQ(got.size(), mean.size());
            for (std::size_t i = 0; i < mean.size(); ++i)
                ASSERT_NEAR(got[i], mean[i], 1e-6)
                    << "rank " << c.rank() << " of " << c.size() << ", gradient element " << i
                    << ": the last bucket filled first; when the first one fills, launch it and every full one after it";
        });
        if (HasFatalFailure()) return;
    }
}

}  // namespace
}  // namespace gl::dist
