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

TEST(VerdictsLab06, Data1FollowsTheModel) {
    EXPECT_EQ(judge_data1(data1_as_modelled()).verdict, Verdict::Reproduced);
    auto no_gain = data1_as_modelled();
    for (auto& r : no_gain) r.step_seconds = 0.022;  // workers do not help
    EXPECT_EQ(judge_data1(no_gain).verdict, Verdict::NotReproduced);
    auto serial_off = data1_as_modelled();
    serial_off[0].step_seconds = 0.040;  // the serial step is not load + compute
    EXPECT_EQ(judge_data1(serial_off).verdict, Verdict::NotReproduced);
    auto one_off = data1_as_modelled();
    one_off[3].step_seconds = 0.017;  // 4 workers 42% off the model
    EXPECT_EQ(judge_data1(one_off).verdict, Verdict::NotReproduced);
    EXPECT_EQ(judge_data1({}).verdict, Verdict::NotRun);
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
