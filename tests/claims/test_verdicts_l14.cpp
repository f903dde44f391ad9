// TPU-1's and ENERGY-1's verdicts on made-up counts: each must follow its numbers, and
// a change of one number must flip it.
#include <gtest/gtest.h>

#include "../../bench/claims/verdicts_l14.hpp"

namespace gl::claims {
namespace {

TEST(ClaimsExact, Tpu1) {
    const Tpu1Measured good{48, 48, 48, 48, 270'000, 4'194'304, 0.57};
    EXPECT_EQ(judge_tpu1(good).verdict, Verdict::Reproduced) << judge_tpu1(good).why;
    Tpu1Measured m = good;
    m.exact = 47;  // one wrong result
    EXPECT_EQ(judge_tpu1(m).verdict, Verdict::NotReproduced);
    m = good;
    m.cycles_match = 40;  // cycles off the formula
    EXPECT_EQ(judge_tpu1(m).verdict, Verdict::NotReproduced);
    m = good;
    m.reads_match = 0;
    EXPECT_EQ(judge_tpu1(m).verdict, Verdict::NotReproduced);
    m = good;
    m.array_reads = m.scalar_reads;  // no fewer reads than the scalar loop
    EXPECT_EQ(judge_tpu1(m).verdict, Verdict::NotReproduced);
    EXPECT_EQ(judge_tpu1(Tpu1Measured{}).verdict, Verdict::NotReproduced) << "no cases, no verdict";
}

TEST(ClaimsExact, Energy1) {
    const Energy1Measured good{2.4, 6.0, 5.7, 0.3};
    EXPECT_EQ(judge_energy1(good).verdict, Verdict::Reproduced) << judge_energy1(good).why;
    Energy1Measured m = good;
    m.scalar_memory_pj_per_mac = 0.2;  // the multiply-add dominates
    EXPECT_EQ(judge_energy1(m).verdict, Verdict::NotReproduced);
    m = good;
    m.array_pj_per_mac = 7.0;  // the array spends more
    EXPECT_EQ(judge_energy1(m).verdict, Verdict::NotReproduced);
}

}  // namespace
}  // namespace gl::claims
