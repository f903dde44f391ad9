// Tensor, pipeline and hybrid parallelism on the thread backend (the same checks run
// under mpirun in test_dist_mpi.cpp), the schedules' orders, and a stage that dies.
#include <gtest/gtest.h>

#include <chrono>

#include "dist/thread_comm.hpp"
#include "mp_checks.hpp"
#include "nn/deep_mlp.hpp"

namespace gl::dist {
namespace {

class MpThreads : public ::testing::TestWithParam<int> {};

TEST_P(MpThreads, ColumnAndRowParallelLinearEqualTheUnsplitLayers) {
    run_threads(GetParam(), [](Communicator& c) { testing::check_tensor_parallel_layers(c); }, 10.0);
}

TEST_P(MpThreads, TensorParallelTrainingEqualsOneProcess) {
    run_threads(GetParam(), [](Communicator& c) { testing::check_tensor_parallel_training(c); }, 10.0);
}

TEST_P(MpThreads, PipelineGradientsEqualTheUnsplitModel) {
    for (auto schedule : {PipeSchedule::GPipe, PipeSchedule::OneFOneB})
        for (int m : {1, 2, 3, 5, 10})
            run_threads(GetParam(), [&](Communicator& c) { testing::check_pipeline(c, schedule, m); }, 10.0);
}

INSTANTIATE_TEST_SUITE_P(Workers, MpThreads, ::testing::Values(1, 2, 3, 4));

TEST(MpThreads, HybridDataTimesTensorOnFourWorkers) {
    run_threads(4, [](Communicator& c) { testing::check_hybrid_data_tensor(c); }, 10.0);
}

TEST(Schedules, GPipeAndOneFOneBOrders) {
    using S = std::vector<PipeStep>;
    EXPECT_EQ(gpipe_order(2, 2, 0), (S{{'F', 0}, {'F', 1}, {'B', 0}, {'B', 1}}));
    EXPECT_EQ(one_f_one_b_order(4, 4, 3), (S{{'F', 0}, {'B', 0}, {'F', 1}, {'B', 1}, {'F', 2}, {'B', 2}, {'F', 3}, {'B', 3}}));
    EXPECT_EQ(one_f_one_b_order(4, 4, 1),
              (S{{'F', 0}, {'F', 1}, {'F', 2}, {'B', 0}, {'F', 3}, {'B', 1}, {'B', 2}, {'B', 3}}));
    EXPECT_EQ(one_f_one_b_order(4, 2, 0), (S{{'F', 0}, {'F', 1}, {'B', 0}, {'B', 1}})) << "warm-up capped by m";
    for (int p : {1, 2, 4, 8})
        for (int m : {1, 3, 8, 16})
            for (int s = 0; s < p; ++s) {
                EXPECT_NO_THROW(check_pipe_order(one_f_one_b_order(p, m, s), m));
                EXPECT_EQ(peak_in_flight(one_f_one_b_order(p, m, s)), std::min(p - s, m)) << "1F1B keeps at most p - s";
                EXPECT_EQ(peak_in_flight(gpipe_order(p, m, s)), m) << "GPipe keeps all m";
            }
    EXPECT_THROW(check_pipe_order({{'B', 0}, {'F', 0}}, 1), Error);
    EXPECT_THROW(check_pipe_order({{'F', 0}, {'B', 0}, {'F', 0}, {'B', 0}}, 2), Error);
    EXPECT_THROW(parse_pipe_schedule("interleaved"), Error);
}

TEST(Schedules, BubbleFractionOfAHandMadeTimeline) {
    // Two stages, one micro-batch, unit steps: F0 on stage 0, F0 then B0 on stage 1, B0 on 0.
    const std::vector<std::vector<PipeEvent>> t = {{{{'F', 0}, 0, 1}, {{'B', 0}, 3, 4}},
                                                   {{{'F', 0}, 1, 2}, {{'B', 0}, 2, 3}}};
    EXPECT_DOUBLE_EQ(bubble_fraction(t), 0.5);
    EXPECT_DOUBLE_EQ(ideal_bubble_fraction(2, 1), 0.5);
    EXPECT_DOUBLE_EQ(ideal_bubble_fraction(4, 8), 3.0 / 11.0);
}

// With calibrated waits the timeline is the stand-in device's clock: every step lasts at
// least its wait, and starts exactly when its stage's device is free and its input (the
// neighbour's step on the same micro-batch) has ended there: never earlier, and never
// later, however late the host thread woke. So the schedule alone decides the bubble.
TEST(MpThreads, CalibratedWaitsKeepADeviceClockThatOnlyTheScheduleDecides) {
    const double fw = 0.002, bw = 0.004;
    for (auto schedule : {PipeSchedule::GPipe, PipeSchedule::OneFOneB})
        for (int p : {2, 4}) {
            const int m = 4;
            std::vector<std::vector<PipeEvent>> t(static_cast<std::size_t>(p));
            run_threads(p, [&](Communicator& c) {
                Rng rng(3);
                PipelineStage pipe(std::make_shared<nn::Linear>(8, 8, rng), c, 8);
                t[static_cast<std::size_t>(c.rank())] =
                    pipe.step(testing::global_batch(16, 9),
                              {.schedule = schedule, .micro_batches = m, .forward_wait_s = fw, .backward_wait_s = bw})
                        .timeline;
            }, 10.0);
            const auto end_of = [&](int stage, char op, int mb) {
                for (const PipeEvent& e : t[static_cast<std::size_t>(stage)])
                    if (e.step == PipeStep{op, mb}) return e.end_s;
                ADD_FAILURE() << "no " << op << " " << mb << " on stage " << stage;
                return 0.0;
            };
            for (int s = 0; s < p; ++s) {
                double free = 0.0;
                for (const PipeEvent& e : t[static_cast<std::size_t>(s)]) {
                    const char op = e.step.op;
                    const int mb = e.step.micro_batch;
                    double ready = 0.0;  // the input's end on the neighbour's device
                    if (op == 'F' && s > 0) ready = end_of(s - 1, 'F', mb);
                    if (op == 'B' && s < p - 1) ready = end_of(s + 1, 'B', mb);
                    EXPECT_DOUBLE_EQ(e.start_s, std::max(free, ready)) << to_string(schedule) << " p " << p << " stage "
                                                                       << s << " " << op << " " << mb;
                    EXPECT_GE(e.end_s - e.start_s, (op == 'F' ? fw : bw) - 1e-12);
                    free = e.end_s;
                }
            }
        }
}

// 1F1B's point: a stage stashes the activations of at most p - s micro-batches, GPipe of
// all m, so for m > p 1F1B's peak (the bytes the executor counted) is at most GPipe's on
// every stage, and below it on the first.
TEST(MpThreads, OneFOneBStashesNoMoreThanGPipeWhenMicroBatchesExceedStages) {
    for (int p : {2, 3, 4})
        for (int m : {p + 1, 8}) {
            std::vector<std::size_t> gpipe(static_cast<std::size_t>(p)), one_f_one_b(gpipe.size());
            run_threads(p, [&](Communicator& c) {
                Rng rng(3);
                PipelineStage pipe(std::make_shared<nn::Linear>(8, 8, rng), c, 8);
                const Batch b = testing::global_batch(16, 9);
                const auto s = static_cast<std::size_t>(c.rank());
                gpipe[s] = pipe.step(b, {.schedule = PipeSchedule::GPipe, .micro_batches = m}).peak_stashed_bytes;
                one_f_one_b[s] = pipe.step(b, {.schedule = PipeSchedule::OneFOneB, .micro_batches = m}).peak_stashed_bytes;
            }, 10.0);
            for (int s = 0; s < p; ++s) {
                const auto i = static_cast<std::size_t>(s);
                EXPECT_GT(gpipe[i], 0u);
                EXPECT_LE(one_f_one_b[i], gpipe[i]) << "p " << p << " m " << m << " stage " << s;
            }
            EXPECT_LT(one_f_one_b[0], gpipe[0]) << "p " << p << " m " << m << ": stage 0 keeps p of m micro-batches";
        }
}

// fit_parallel with tp and pp trains the same model as one process's fit() (mp_checks.hpp).
class ModelParallelFit : public ::testing::TestWithParam<std::tuple<std::string, int, bool>> {};

TEST_P(ModelParallelFit, EqualsOneProcess) {
    const auto& [mode, workers, deep] = GetParam();
    run_threads(workers, [&](Communicator& c) { testing::check_model_parallel_fit(c, mode, deep); }, 30.0);
}

INSTANTIATE_TEST_SUITE_P(Modes, ModelParallelFit,
                         ::testing::Values(std::tuple{std::string("tp"), 2, false}, std::tuple{std::string("tp"), 4, true},
                                           std::tuple{std::string("pp"), 2, false}, std::tuple{std::string("pp"), 4, true}));

// A stage whose layer throws on its third forward: the others stop with an error.
class DiesOnThirdForward final : public nn::Module {
public:
    Tensor forward(const Tensor& x) override {
        if (++calls_ == 3) throw Error("simulated crash of stage 1");
        return relu(x);
    }
    std::string describe() const override { return "DiesOnThirdForward"; }

private:
    int calls_ = 0;
};

TEST(MpThreads, AStageThatDiesMidPipelineStopsTheOthersWithAnError) {
    const auto start = std::chrono::steady_clock::now();
    try {
        run_threads(3, [](Communicator& c) {
            const Batch b = testing::global_batch(8, 5);
            Rng rng(1);
            std::shared_ptr<nn::Module> stage;
            if (c.rank() == 1) stage = std::make_shared<DiesOnThirdForward>();
            else stage = std::make_shared<nn::Linear>(8, 8, rng);
            PipelineStage pipe(stage, c, 8);
            pipe.step(b, {.schedule = PipeSchedule::GPipe, .micro_batches = 4});
        }, 30.0);
        FAIL() << "the pipeline finished although stage 1 died";
    } catch (const Error& e) {
        EXPECT_EQ(std::string(e.what()), "rank 1: simulated crash of stage 1");
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_LT(seconds, 10.0) << "the other stages must not wait for the 30 s timeout";
}

TEST(ProcessGroups, GridGroupsTranslateRanksAndReduceWithinTheGroup) {
    run_threads(4, [](Communicator& c) {
        GridGroups g = make_grid(c, 2);
        EXPECT_EQ(g.tensor->rank(), c.rank() % 2);
        EXPECT_EQ(g.data->rank(), c.rank() / 2);
        float v = static_cast<float>(c.rank());
        all_reduce(*g.tensor, &v, 1, DType::Float32);
        EXPECT_EQ(v, c.rank() < 2 ? 1.0f : 5.0f) << "tensor groups {0,1} and {2,3}";
        float w = static_cast<float>(c.rank());
        all_reduce(*g.data, &w, 1, DType::Float32);
        EXPECT_EQ(w, c.rank() % 2 == 0 ? 2.0f : 4.0f) << "data groups {0,2} and {1,3}";
    }, 10.0);
    EXPECT_THROW(run_threads(3, [](Communicator& c) { make_grid(c, 2); }, 5.0), Error);
}

}  // namespace
}  // namespace gl::dist
