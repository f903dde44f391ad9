// Lab 09's verdicts (MP-1, MP-2) on made-up measurements: each outcome of each verdict.
#include <gtest/gtest.h>

#include "../../bench/claims/verdicts_l09.hpp"

namespace gl::claims {
namespace {

Mp1Measured good_mp1() {
    Mp1Measured m;
    m.max_difference = 1e-7;
    m.tolerance = 1e-5;
    m.bytes = {{"data", 2, 0, 100, 100}, {"tensor", 2, 0, 40, 40}, {"pipeline", 2, 0, 8, 8}};
    m.single_accuracy = 0.84;
    m.tensor_accuracy = 0.842;
    m.pipeline_accuracy = 0.838;
    return m;
}

TEST(VerdictsL09, Mp1) {
    EXPECT_EQ(judge_mp1(good_mp1()).verdict, Verdict::Reproduced);
    auto m = good_mp1();
    m.max_difference = 1e-3;
    EXPECT_EQ(judge_mp1(m).verdict, Verdict::NotReproduced) << "split differs";
    m = good_mp1();
    m.bytes[1].counted = 41;
    EXPECT_EQ(judge_mp1(m).verdict, Verdict::NotReproduced) << "a byte count off its formula";
    m = good_mp1();
    m.pipeline_accuracy = 0.80;
    EXPECT_EQ(judge_mp1(m).verdict, Verdict::NotReproduced) << "pipelined training fell short";
    m = good_mp1();
    m.bytes.clear();
    EXPECT_EQ(judge_mp1(m).verdict, Verdict::NotReproduced) << "nothing counted";
    m = good_mp1();
    m.deep_single_accuracy = 0.85;
    m.deep_tensor_accuracy = 0.852;
    m.deep_pipeline_accuracy = 0.846;
    EXPECT_EQ(judge_mp1(m).verdict, Verdict::Reproduced) << "the deep MLP also matches";
    m.deep_tensor_accuracy = 0.82;
    EXPECT_EQ(judge_mp1(m).verdict, Verdict::NotReproduced) << "the deep MLP's tensor-parallel training fell short";
    m.deep_tensor_accuracy = -1;
    EXPECT_EQ(judge_mp1(m).verdict, Verdict::NotReproduced) << "the deep MLP trained in one process only";
    m = good_mp1();
    m.single_accuracy = m.tensor_accuracy = m.pipeline_accuracy = -1;
    EXPECT_EQ(judge_mp1(m).verdict, Verdict::Reproduced) << "not trained: judged on equality and bytes";
}

TEST(VerdictsL09, Mp2) {
    const std::vector<BubbleRun> good{{"gpipe", 2, 4, 0.205, 0.2}, {"1f1b", 4, 8, 0.27, 3.0 / 11}};
    const std::vector<StashRun> mem{{2, 4, 1000, 500}, {4, 4, 800, 800}};
    EXPECT_EQ(judge_mp2(good, mem).verdict, Verdict::Reproduced) << "m = p runs are not judged on memory";
    EXPECT_EQ(judge_mp2({{"gpipe", 2, 4, 0.25, 0.2}}, mem).verdict, Verdict::NotReproduced) << "25% off";
    EXPECT_EQ(judge_mp2(good, {{2, 4, 1000, 1000}}).verdict, Verdict::NotReproduced) << "1F1B saved nothing";
    EXPECT_EQ(judge_mp2(good, {{4, 4, 800, 400}}).verdict, Verdict::NotReproduced) << "no run with m > p";
    EXPECT_EQ(judge_mp2({}, mem).verdict, Verdict::NotReproduced);
}

}  // namespace
}  // namespace gl::claims
