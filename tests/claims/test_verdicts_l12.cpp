// Q-1's verdict on made-up numbers: each part of the claim failing on its own, all holding,
// and a speed-up past the instructions' ceiling.
#include <gtest/gtest.h>

#include "../../bench/claims/verdicts_l12.hpp"

namespace gl::claims {
namespace {

Q1Measured holding() {
    Q1Measured m;
    m.fp32_accuracy = 0.860;
    m.variants = {{"PTQ minmax per-tensor", 0.850, false, false},
                  {"PTQ minmax per-channel", 0.856, true, false},
                  {"QAT per-channel", 0.858, true, true}};
    m.float_file_bytes = 407288;
    m.int8_file_bytes = 103768;
    m.speeds = {{1024, 300, 100, 290}, {2048, 320, 110, 330}};
    return m;
}

TEST(ClaimsQ1, ReproducedWhenEveryPartHolds) { EXPECT_EQ(judge_q1(holding()).verdict, Verdict::Reproduced); }

TEST(ClaimsQ1, EachPartCanFailOnItsOwn) {
    Q1Measured ptq = holding();
    ptq.variants[1].accuracy = 0.845;  // 1.5 points below FP32
    EXPECT_EQ(judge_q1(ptq).verdict, Verdict::NotReproduced);
    EXPECT_NE(judge_q1(ptq).why.find("PTQ"), std::string::npos);
    Q1Measured qat = holding();
    qat.variants[2].accuracy = 0.852;
    EXPECT_EQ(judge_q1(qat).verdict, Verdict::NotReproduced);
    Q1Measured size = holding();
    size.int8_file_bytes = 150000;
    EXPECT_EQ(judge_q1(size).verdict, Verdict::NotReproduced);
    Q1Measured slow = holding();
    slow.speeds[1].int8_gops = 200;  // 1.8x at N = 2048
    EXPECT_EQ(judge_q1(slow).verdict, Verdict::NotReproduced);
    EXPECT_NE(judge_q1(slow).why.find("2.5x"), std::string::npos);
}

TEST(ClaimsQ1, PastTheCeilingIsSuspectAndMissingPartsAreNotRun) {
    Q1Measured fast = holding();
    fast.speeds[0].int8_gops = 600;  // 6x an FP32 FMA kernel: more than vpdpbusd allows
    EXPECT_EQ(judge_q1(fast).verdict, Verdict::Suspect);
    Q1Measured none = holding();
    none.speeds.clear();
    EXPECT_EQ(judge_q1(none).verdict, Verdict::NotRun);
}

}  // namespace
}  // namespace gl::claims
