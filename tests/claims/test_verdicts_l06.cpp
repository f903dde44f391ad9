// Lab 06's verdicts (bench/claims/verdicts_l06.hpp) on made-up measurements: each must
// follow its numbers, and changing one number must flip it.
#include <gtest/gtest.h>

#include "../../bench/claims/verdicts_l06.hpp"

namespace gl::claims {
namespace {

// L = 10 ms, C = 12 ms, 2 cores: the model says 22, 12, 12 (bounded by (L + C) / 2 = 11), 12.
std::vector<StepReading> data1_as_modelled() {
    return {{0, 0.0225, 0.022, 0.45}, {1, 0.0125, 0.012, 0.02}, {2, 0.0121, 0.012, 0.01}, {4, 0.0130, 0.012, 0.01}};
}

constexpr double kLoad = 0.010, kCompute = 0.012;

TEST(VerdictsLab06, Data1FollowsTheModel) {
    EXPECT_EQ(judge_data1(data1_as_modelled(), kLoad, kCompute).verdict, Verdict::Reproduced);
    auto no_gain = data1_as_modelled();
    for (auto& r : no_gain) r.step_seconds = 0.022;  // workers do not help
    EXPECT_EQ(judge_data1(no_gain, kLoad, kCompute).verdict, Verdict::NotReproduced);
    auto serial_off = data1_as_modelled();
    serial_off[0].step_seconds = 0.040;  // the serial step is not load + compute
    EXPECT_EQ(judge_data1(serial_off, kLoad, kCompute).verdict, Verdict::NotReproduced);
    auto one_off = data1_as_modelled();
    one_off[3].step_seconds = 0.017;  // 4 workers 42% off the model
    EXPECT_EQ(judge_data1(one_off, kLoad, kCompute).verdict, Verdict::NotReproduced);
    EXPECT_EQ(judge_data1({}, kLoad, kCompute).verdict, Verdict::NotRun);
    EXPECT_EQ(judge_data1(data1_as_modelled(), 0.0, kCompute).verdict, Verdict::NotRun);
}

TEST(VerdictsLab06, Data1WithLoadAtMostComputeNeedsTwoWorkersToHideIt) {
    auto waits = data1_as_modelled();
    waits[2].wait_fraction = 0.099;  // L <= C: the model says 0, so up to 10% passes
    EXPECT_EQ(judge_data1(waits, kLoad, kCompute).verdict, Verdict::Reproduced);
    waits[2].wait_fraction = 0.12;  // the loop still waits 12% of the step
    const Judgement j = judge_data1(waits, kLoad, kCompute);
    EXPECT_EQ(j.verdict, Verdict::NotReproduced);
    EXPECT_NE(j.why.find("12.0% of the step"), std::string::npos) << j.why;
}

TEST(VerdictsLab06, Data1PredictedWaitIsWhatComputeCannotCover) {
    EXPECT_DOUBLE_EQ(predicted_wait_fraction(0, 0.010, 0.030), 0.25);  // L / (L + C)
    EXPECT_DOUBLE_EQ(predicted_wait_fraction(2, 0.020, 0.010), 0.0);   // L / 2 = C
    EXPECT_NEAR(predicted_wait_fraction(2, 0.030, 0.012), 0.2, 1e-12);  // 1 - 12 / 15
    EXPECT_NEAR(predicted_wait_fraction(1, 0.030, 0.012), 0.6, 1e-12);  // 1 - 12 / 30
    // L = 30 ms, C = 12 ms: 2 workers make a batch every 15 ms, so the loop waits 20% of
    // a step; 25% passes (20% + 10%), 35% does not.
    std::vector<StepReading> slow_load{{0, 0.042, 0.042, 0.7}, {1, 0.030, 0.030, 0.6}, {2, 0.0155, 0.015, 0.25}};
    EXPECT_EQ(judge_data1(slow_load, 0.030, 0.012).verdict, Verdict::Reproduced);
    slow_load[2].wait_fraction = 0.35;
    EXPECT_EQ(judge_data1(slow_load, 0.030, 0.012).verdict, Verdict::NotReproduced);
}

TEST(VerdictsLab06, Data2BestNearTheCoresAndNoGainPastThem) {
    EXPECT_EQ(judge_data2({10, 18, 30, 29, 27}, 2).verdict, Verdict::Reproduced);
    EXPECT_EQ(judge_data2({10, 18, 30, 29, 31}, 2).verdict, Verdict::NotReproduced);  // 4 workers fastest
    EXPECT_EQ(judge_data2({10, 18, 25, 29, 28, 27, 26, 25, 24}, 4).verdict, Verdict::Reproduced);
    EXPECT_EQ(judge_data2({10, 30, 20, 19, 18, 17, 16, 15, 14}, 4).verdict, Verdict::NotReproduced);  // best 1 of 4 cores
    EXPECT_EQ(judge_data2({10, 18}, 2).verdict, Verdict::NotRun);
}

TEST(VerdictsLab06, Data4NeedsEqualityWithinOneLevelAndTheAntialiasDifference) {
    Data4Measured m{true, true, 0.5 / 255.0, 0.3};
    EXPECT_EQ(judge_data4(m).verdict, Verdict::Reproduced);
    m.worst_matching_difference = 2.0 / 255.0;
    EXPECT_EQ(judge_data4(m).verdict, Verdict::NotReproduced);
    m = {true, true, 0.5 / 255.0, 0.01};
    EXPECT_EQ(judge_data4(m).verdict, Verdict::NotReproduced);
    m = {false, true, 0.0, 0.3};
    EXPECT_EQ(judge_data4(m).verdict, Verdict::NotReproduced);
    m = {true, false, 0.0, 0.0};
    EXPECT_EQ(judge_data4(m).verdict, Verdict::NotRun);
}

}  // namespace
}  // namespace gl::claims
