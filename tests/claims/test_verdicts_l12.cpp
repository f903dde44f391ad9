// Q-1's verdict on made-up numbers: each part of the claim failing on its own, all holding,
// and a speed-up past the instructions' ceiling.
#include <gtest/gtest.h>

#include "../../bench/claims/verdicts_l12.hpp"

namespace gl::claims {
namespace {

Q1Measured holding() {
    Q1Measured m;
    Q1Model mlp{"MLP", 0.860, {}, 407288, 103768};
    mlp.variants = {{"PTQ minmax per-tensor", 0.850, false, false},
                    {"PTQ minmax per-channel", 0.856, true, false},
                    {"QAT per-channel", 0.858, true, true}};
    Q1Model cnn{"CNN", 0.900, {}, 1686000, 423000};
    cnn.variants = {{"PTQ minmax per-tensor", 0.880, false, false},
                    {"PTQ mse per-channel", 0.897, true, false},
                    {"QAT per-channel", 0.899, true, true}};
    m.models = {mlp, cnn};
    m.speeds = {{1024, 300, 100, 290}, {2048, 320, 110, 310}};
    return m;
}

TEST(ClaimsQ1, ReproducedWhenEveryPartHolds) { EXPECT_EQ(judge_q1(holding()).verdict, Verdict::Reproduced); }

// A quantized model that beats FP32 is said to be above it, not "-0.4 points below".
TEST(ClaimsQ1, SaysWhetherQuantizedAccuracyIsBelowOrAboveFp32) {
    Q1Measured m = holding();
    m.models[0].variants[1].accuracy = m.models[0].fp32_accuracy - 0.015;
    m.models[0].variants[2].accuracy = m.models[0].fp32_accuracy + 0.004;
    const std::string why = judge_q1(m).why;
    EXPECT_NE(why.find("per-channel PTQ 1.50 points below FP32"), std::string::npos) << why;
    EXPECT_NE(why.find("QAT 0.40 points above FP32"), std::string::npos) << why;
}

TEST(ClaimsQ1, EachPartCanFailOnItsOwn) {
    for (std::size_t model : {0u, 1u}) {
        Q1Measured ptq = holding();
        ptq.models[model].variants[1].accuracy = ptq.models[model].fp32_accuracy - 0.015;  // 1.5 points below FP32
        EXPECT_EQ(judge_q1(ptq).verdict, Verdict::NotReproduced);
        EXPECT_NE(judge_q1(ptq).why.find(ptq.models[model].name + " per-channel PTQ"), std::string::npos);
        Q1Measured qat = holding();
        qat.models[model].variants[2].accuracy = qat.models[model].fp32_accuracy - 0.008;
        EXPECT_EQ(judge_q1(qat).verdict, Verdict::NotReproduced);
        Q1Measured size = holding();
        size.models[model].int8_file_bytes *= 1.5;
        EXPECT_EQ(judge_q1(size).verdict, Verdict::NotReproduced);
    }
    Q1Measured per_tensor_only = holding();  // a good per-tensor PTQ does not stand in for per channel
    per_tensor_only.models[1].variants[1].accuracy = 0.85;
    per_tensor_only.models[1].variants[0].accuracy = 0.9;
    EXPECT_EQ(judge_q1(per_tensor_only).verdict, Verdict::NotReproduced);
    Q1Measured slow = holding();
    slow.speeds[1].int8_gops = 200;  // 1.8x at N = 2048
    EXPECT_EQ(judge_q1(slow).verdict, Verdict::NotReproduced);
    EXPECT_NE(judge_q1(slow).why.find("2.5x"), std::string::npos);
    Q1Measured behind = holding();
    behind.speeds[0].onednn_int8_gops = 320;  // 300 GOP/s against oneDNN's 320
    EXPECT_EQ(judge_q1(behind).verdict, Verdict::NotReproduced);
    EXPECT_NE(judge_q1(behind).why.find("oneDNN"), std::string::npos);
    Q1Measured no_onednn = holding();  // a build without oneDNN is judged on the rest
    for (auto& s : no_onednn.speeds) s.onednn_int8_gops = 0;
    EXPECT_EQ(judge_q1(no_onednn).verdict, Verdict::Reproduced);
}

TEST(ClaimsQ1, PastTheCeilingIsSuspectAndMissingPartsAreNotRun) {
    Q1Measured fast = holding();
    fast.speeds[0].int8_gops = 600;  // 6x an FP32 FMA kernel: more than vpdpbusd allows
    EXPECT_EQ(judge_q1(fast).verdict, Verdict::Suspect);
    Q1Measured none = holding();
    none.speeds.clear();
    EXPECT_EQ(judge_q1(none).verdict, Verdict::NotRun);
    Q1Measured mlp_only = holding();
    mlp_only.models.pop_back();
    EXPECT_EQ(judge_q1(mlp_only).verdict, Verdict::NotRun);
}

}  // namespace
}  // namespace gl::claims
