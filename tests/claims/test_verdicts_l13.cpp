// Lab 13's verdicts (bench/claims/verdicts_l13.cpp) on made-up measurements: both outcomes.
#include <gtest/gtest.h>

#include "../../bench/claims/verdicts_l13.hpp"

namespace gl::claims {
namespace {

struct Jit1 {
    StepVariant eager{"eager", 4'000'000, 51, 120, 900'000, 1e-3};
    StepVariant captured{"captured", 4'000'000, 51, 0, 3'000'000, 1e-3};
    StepVariant optimized{"captured + fused + planned", 2'500'000, 16, 0, 440'000, 1e-3};
    double diff = 1e-7;
};

TEST(ClaimsJit1, ReproducedWhenFusionAndPlanningBothPayAndOutputsAgree) {
    const Jit1 m;
    const Judgement j = judge_jit1(m.eager, m.captured, m.optimized, m.diff);
    EXPECT_EQ(j.verdict, Verdict::Reproduced) << j.why;
    EXPECT_NE(j.why.find("16 kernels instead of 51"), std::string::npos) << j.why;
}

TEST(ClaimsJit1, NotReproducedWhenAnyPartFails) {
    {
        Jit1 m;
        m.optimized.bytes_moved = m.captured.bytes_moved;  // fusion saved nothing
        EXPECT_EQ(judge_jit1(m.eager, m.captured, m.optimized, m.diff).verdict, Verdict::NotReproduced);
    }
    {
        Jit1 m;
        m.optimized.peak_bytes = m.eager.peak_bytes + 1;  // the plan is worse than eager
        EXPECT_EQ(judge_jit1(m.eager, m.captured, m.optimized, m.diff).verdict, Verdict::NotReproduced);
    }
    {
        Jit1 m;
        m.optimized.allocations = 3;  // the step allocates
        EXPECT_EQ(judge_jit1(m.eager, m.captured, m.optimized, m.diff).verdict, Verdict::NotReproduced);
    }
    {
        Jit1 m;
        const Judgement j = judge_jit1(m.eager, m.captured, m.optimized, 1e-2);  // different weights
        EXPECT_EQ(j.verdict, Verdict::NotReproduced);
        EXPECT_NE(j.why.find("NOT equal"), std::string::npos) << j.why;
    }
}

}  // namespace
}  // namespace gl::claims

namespace gl::claims {
namespace {

Deploy1Measured deploy1_good() {
    Deploy1Measured m;
    m.eager_vs_aot = 2e-7;
    m.ort_ran = true;
    m.checker_ok = true;
    m.aot_vs_ort = 5e-7;
    m.aot_allocations = 0;
    m.eager_allocations = 9;
    m.jit_startup_seconds = 3e-3;
    m.aot_startup_seconds = 2e-3;
    m.eager_batch_seconds = 1e-3;
    m.aot_batch_seconds = 8e-4;
    return m;
}

TEST(ClaimsDeploy1, ReproducedWhenAllThreeAgreeAndTheRuntimeDoesNotAllocate) {
    const Judgement j = judge_deploy1(deploy1_good());
    EXPECT_EQ(j.verdict, Verdict::Reproduced) << j.why;
    EXPECT_NE(j.why.find("accepts the file"), std::string::npos) << j.why;
    EXPECT_NE(j.why.find("JIT vs AOT"), std::string::npos) << j.why;
}

TEST(ClaimsDeploy1, NotReproducedWhenAnyComparisonFails) {
    Deploy1Measured m = deploy1_good();
    m.aot_vs_ort = 1e-3;  // ONNX Runtime disagrees
    EXPECT_EQ(judge_deploy1(m).verdict, Verdict::NotReproduced);
    m = deploy1_good();
    m.checker_ok = false;
    EXPECT_NE(judge_deploy1(m).why.find("REJECTS"), std::string::npos);
    EXPECT_EQ(judge_deploy1(m).verdict, Verdict::NotReproduced);
    m = deploy1_good();
    m.eager_vs_aot = 1e-4;  // our runtime disagrees with eager
    EXPECT_EQ(judge_deploy1(m).verdict, Verdict::NotReproduced);
    m = deploy1_good();
    m.aot_allocations = 4;  // the runtime allocates per batch
    EXPECT_EQ(judge_deploy1(m).verdict, Verdict::NotReproduced);
}

TEST(ClaimsDeploy1, NotRunWithoutOnnxRuntimeButStillNotReproducedOnAMismatch) {
    Deploy1Measured m = deploy1_good();
    m.ort_ran = false;
    m.ort_why_not = "onnxruntime is not installed";
    const Judgement j = judge_deploy1(m);
    EXPECT_EQ(j.verdict, Verdict::NotRun);
    EXPECT_NE(j.why.find("onnxruntime is not installed"), std::string::npos) << j.why;
    m.eager_vs_aot = 1.0;
    EXPECT_EQ(judge_deploy1(m).verdict, Verdict::NotReproduced);
}

}  // namespace
}  // namespace gl::claims
