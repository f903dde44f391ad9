// CONV-1 and CONV-2 verdicts on made-up measurements: each condition flips the verdict.
#include <gtest/gtest.h>

#include "../../bench/claims/verdicts_l11.hpp"

namespace gl::claims {
namespace {

Conv1Measured good_conv1() {
    Conv1Measured m;
    m.worst_float32_error = 3e-7;
    m.winograd_f2_ratio = 2.25;
    m.winograd_f4_ratio = 4.0;
    m.timings = {{"conv1", {{"direct", 0.010}, {"im2col", 0.004}, {"winograd_f2", 0.002}}, "winograd_f2"},
                 {"conv2", {{"direct", 0.100}, {"im2col", 0.010}, {"winograd_f2", 0.020}}, "im2col"}};
    return m;
}

TEST(VerdictsL11, Conv1ReproducedWhenAllHold) {
    const Judgement j = judge_conv1(good_conv1());
    EXPECT_EQ(j.verdict, Verdict::Reproduced) << j.why;
    EXPECT_NE(j.why.find("depends on the shape"), std::string::npos);
}

TEST(VerdictsL11, Conv1NotReproducedWhenAnyFails) {
    Conv1Measured m = good_conv1();
    m.worst_float32_error = 2e-4;
    EXPECT_EQ(judge_conv1(m).verdict, Verdict::NotReproduced);
    m = good_conv1();
    m.winograd_f2_ratio = 2.0;
    EXPECT_EQ(judge_conv1(m).verdict, Verdict::NotReproduced);
    m = good_conv1();
    m.timings[0].autotuner_pick = "direct";  // 5x slower than the fastest
    EXPECT_EQ(judge_conv1(m).verdict, Verdict::NotReproduced);
    EXPECT_NE(judge_conv1(m).why.find("missed"), std::string::npos);
    m = good_conv1();
    m.timings[0].seconds[2].second = 0.005;  // im2col now wins both shapes
    m.timings[0].autotuner_pick = "im2col";
    EXPECT_EQ(judge_conv1(m).verdict, Verdict::NotReproduced);
    EXPECT_NE(judge_conv1(m).why.find("the same on every shape"), std::string::npos);
    m = good_conv1();
    m.timings.clear();
    EXPECT_EQ(judge_conv1(m).verdict, Verdict::NotReproduced);
}

TEST(VerdictsL11, Conv2NeedsTheCnnAheadByAPoint) {
    EXPECT_EQ(judge_conv2(0.905, 0.86, 2).verdict, Verdict::Reproduced);
    EXPECT_EQ(judge_conv2(0.865, 0.86, 2).verdict, Verdict::NotReproduced);
    EXPECT_EQ(judge_conv2(0.80, 0.86, 2).verdict, Verdict::NotReproduced);
}

}  // namespace
}  // namespace gl::claims
