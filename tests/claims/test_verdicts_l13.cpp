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
