// CHOICE-1's model and verdict (bench/claims/verdicts_l15_choice.cpp) on made-up
// measurements: each outcome is reachable, and each condition flips it.
#include <gtest/gtest.h>

#include "../../bench/claims/verdicts_l15_choice.hpp"

namespace gl::claims {
namespace {

/// Widths 16, 64, 256, 1024 on one batch; the GPU faster from index @p gpu_from on
/// (4: never; 0: everywhere).
Choice1Measured sweep(std::size_t gpu_from, bool measured, std::int64_t batch = 32) {
    Choice1Measured m;
    m.gpu_measured = measured;
    m.gpu = measured ? "cuda:0" : "a model";
    const std::int64_t widths[] = {16, 64, 256, 1024};
    for (std::size_t i = 0; i < 4; ++i) {
        const double cpu = 1e-4 * static_cast<double>(1 << (2 * i));
        m.points.push_back({widths[i], batch, cpu, i >= gpu_from ? cpu / 2 : cpu * 2});
    }
    return m;
}

TEST(ClaimsChoice1, TheCrossoverIsWhereTheGpuStaysFaster) {
    EXPECT_EQ(crossover(sweep(2, true).points, 32), std::optional<std::size_t>(2));
    EXPECT_EQ(crossover(sweep(0, true).points, 32), std::optional<std::size_t>(0));
    EXPECT_EQ(crossover(sweep(4, true).points, 32), std::nullopt);
    Choice1Measured back_and_forth = sweep(1, true);
    back_and_forth.points[2].gpu_seconds = back_and_forth.points[2].cpu_seconds * 2;  // CPU wins again at 256
    EXPECT_EQ(crossover(back_and_forth.points, 32), std::optional<std::size_t>(3));
    EXPECT_EQ(crossover(back_and_forth.points, 256), std::nullopt);  // no point of that batch
}

TEST(ClaimsChoice1, MeasuredOnAGpuACrossoverInsideTheRangeIsReproduced) {
    const Judgement j = judge_choice1(sweep(2, true));
    EXPECT_EQ(j.verdict, Verdict::Reproduced);
    EXPECT_NE(j.why.find("GPU faster from width 256"), std::string::npos) << j.why;
    EXPECT_EQ(judge_choice1(sweep(0, true)).verdict, Verdict::NotReproduced);  // the GPU wins even the smallest
    EXPECT_EQ(judge_choice1(sweep(4, true)).verdict, Verdict::NotReproduced);  // the CPU wins even the largest
}

TEST(ClaimsChoice1, EveryBatchMustCross) {
    Choice1Measured both = sweep(2, true);
    for (const auto& p : sweep(1, true, 256).points) both.points.push_back(p);
    EXPECT_EQ(judge_choice1(both).verdict, Verdict::Reproduced);
    Choice1Measured one_fails = sweep(2, true);
    for (const auto& p : sweep(4, true, 256).points) one_fails.points.push_back(p);
    EXPECT_EQ(judge_choice1(one_fails).verdict, Verdict::NotReproduced);
}

TEST(ClaimsChoice1, ModelledGpuTimesNeedAGpuAndSayThePrediction) {
    for (std::size_t from : {0u, 2u, 4u}) EXPECT_EQ(judge_choice1(sweep(from, false)).verdict, Verdict::NeedsGpu);
    const Judgement j = judge_choice1(sweep(2, false));
    EXPECT_NE(j.why.find("predicts"), std::string::npos) << j.why;
    EXPECT_NE(j.why.find("GPU faster from width 256"), std::string::npos) << j.why;
    EXPECT_EQ(judge_choice1(Choice1Measured{}).verdict, Verdict::NotRun);
}

TEST(ClaimsChoice1, TheModelAddsLaunchesCopyArithmeticAndOneSync) {
    GpuModel g;
    g.launch_us = 5.0;
    g.sync_us = 10.0;
    g.link_gbs = 50.0;
    g.fp32_tflops = 10.0;
    // 20 launches: 100 us; 5e6 bytes at 50 GB/s: 100 us; 1e9 FLOPs at 10 TFLOP/s: 100 us; sync 10 us.
    EXPECT_NEAR(modeled_gpu_seconds(g, {20.0, 5e6, 1e9}), 310e-6, 1e-12);
    EXPECT_NEAR(modeled_gpu_seconds(g, {0.0, 0.0, 0.0}), 10e-6, 1e-12);
    const GpuModel h200 = h200_model();
    EXPECT_GT(h200.launch_us, 0.0);
    EXPECT_GT(h200.link_gbs, 0.0);
    EXPECT_GT(h200.fp32_tflops, 0.0);
    EXPECT_NE(h200.source.find("datasheet"), std::string::npos);
}

}  // namespace
}  // namespace gl::claims
