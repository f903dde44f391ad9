// Lab 09 contract tests: the tensor-parallel layers on uneven splits up to 5 workers, a
// batch of one, a layer without bias, an input that needs no gradient (then backward
// communicates nothing), inputs left unchanged; the 1F1B pipeline with fewer micro-batches
// than stages and a batch that does not divide. The student's code runs only inside
// graded::student (through per_rank), each call returning everything the checks read.
#include <gtest/gtest.h>

#include "lab09_checks.hpp"
#include "per_rank.hpp"

namespace gl::dist {
namespace {

using lab09::max_diff;

constexpr double kTimeout = 2.0;

TEST(Lab09, ContractTensorParallelEdgeCases) {
    for (int n = 2; n <= 5; ++n)
        for (const std::int64_t batch : {1, 3}) {
            Rng rng(static_cast<std::uint64_t>(10 * n + batch));
            nn::Linear first(11, 5 + n, rng, false), second(5 + n, 7, rng, false);
            const Tensor x = rand_uniform({batch, 11}, -1, 1, rng);
            const std::vector<float> x_before = x.to_vector<float>();
            // Per rank: output, weight gradients, x unchanged (1/0), bytes sent in backward.
            using Rank = std::pair<std::vector<Tensor>, std::vector<std::uint64_t>>;
            const auto got = testing::per_rank<Rank>("edge", n, [&](Communicator& c) {
                TensorParallelMlp mlp(first, second, c);
                const Tensor z = mlp.forward(x);  // x needs no gradient: f's backward has nothing to sum
                const std::uint64_t forward = c.stats().bytes_sent;
                sum(z).backward();
                return Rank{{z.detach(), mlp.column().weight.grad(), mlp.row().weight.grad()},
                            {x.to_vector<float>() == x_before ? 1u : 0u, c.stats().bytes_sent - forward}};
            }, kTimeout, "every rank must make the same all-reduces in the same order");
            if (!got) return;
            Tensor zr = second.forward(relu(first.forward(x)));
            sum(zr).backward();
            for (int r = 0; r < n; ++r) {
                const auto& [t, counts] = (*got)[static_cast<std::size_t>(r)];
                ASSERT_EQ(t.size(), 3u);
                ASSERT_EQ(counts.size(), 2u);
                const std::string where = std::to_string(n) + " workers, batch " + std::to_string(batch) + ", rank " +
                                          std::to_string(r) + ", no bias";
                EXPECT_LT(max_diff(t[0], zr.detach()), lab09::kTol) << where << ": output";
                EXPECT_LT(max_diff(t[1], lab09::my_rows(first.weight.grad(), n, r)), lab09::kTol) << where;
                EXPECT_LT(max_diff(t[2], lab09::my_columns(second.weight.grad(), n, r)), lab09::kTol) << where;
                EXPECT_EQ(counts[0], 1u) << where << ": the input must be left unchanged";
                EXPECT_EQ(counts[1], 0u) << where << ": an input that needs no gradient needs no all-reduce in backward";
            }
        }
}

TEST(Lab09, ContractOneFOneBFewerMicroBatchesThanStagesUnevenBatch) {
    for (const int m : {1, 2, 5}) {
        const int p = 4;
        const Batch b = testing::global_batch(11, 93);  // 11 rows: micro-batches of unequal size
        using Rank = std::pair<std::vector<Tensor>, std::int32_t>;
        const auto got = testing::per_rank<Rank>("uneven", p, [&](Communicator& c) {
            auto model = lab09::deep_net();
            PipelineStage stage(split_stages(*model, p, c.rank()), c, lab09::stage_input(p, c.rank()));
            const PipelineStats st = stage.step(b, {.schedule = PipeSchedule::OneFOneB, .micro_batches = m});
            return Rank{lab09::stage_grads(*model, p, c.rank()), st.peak_in_flight};
        }, kTimeout, "the stages' orders must match: forwards 0..m-1, backwards 0..m-1");
        if (!got) return;
        auto ref = lab09::deep_net();
        cross_entropy(ref->forward(b.inputs), b.targets).backward();
        for (int s = 0; s < p; ++s) {
            const auto& [grads, peak] = (*got)[static_cast<std::size_t>(s)];
            const auto want = lab09::stage_grads(*ref, p, s);
            ASSERT_EQ(grads.size(), want.size());
            for (std::size_t k = 0; k < want.size(); ++k)
                EXPECT_LT(max_diff(grads[k], want[k]), lab09::kTol) << "m = " << m << ", stage " << s << ", parameter " << k;
            EXPECT_EQ(peak, std::min(p - s, m)) << "m = " << m << ", stage " << s;
        }
    }
}

}  // namespace
}  // namespace gl::dist
