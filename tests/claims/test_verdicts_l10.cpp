// Lab 10's verdict (bench/claims/verdicts_l10.cpp) on made-up measurements: both outcomes.
#include <gtest/gtest.h>

#include "../../bench/claims/verdicts_l10.hpp"

namespace gl::claims {
namespace {

std::vector<Prof1Row> good_rows() {
    return {{"tiny-batch", "low_utilization", "low_utilization", "seconds per sample", 4e-4, 1.5e-5},
            {"slow-loading", "data_loading", "data_loading", "seconds per step", 0.02, 0.003},
            {"memory-cap", "out_of_memory", "out_of_memory", "peak bytes", 8e6, 2.4e6},
            {"data-parallel", "communication", "communication", "communication bytes per sample", 2.4e6, 3e5},
            {"host-sync", "host_sync", "host_sync", "host syncs per step", 1, 0}};
}

TEST(ClaimsProf1, ReproducedWhenEveryDiagnosisIsRightAndEveryRemedyHelps) {
    const Judgement j = judge_prof1(good_rows());
    EXPECT_EQ(j.verdict, Verdict::Reproduced) << j.why;
    EXPECT_NE(j.why.find("each of the 5 diagnoses"), std::string::npos) << j.why;
}

TEST(ClaimsProf1, NotReproducedWhenADiagnosisMissesThePlantedProblem) {
    auto rows = good_rows();
    rows[1].diagnosed = "low_utilization";
    const Judgement j = judge_prof1(rows);
    EXPECT_EQ(j.verdict, Verdict::NotReproduced);
    EXPECT_NE(j.why.find("slow-loading: the diagnosis named low_utilization"), std::string::npos) << j.why;
}

TEST(ClaimsProf1, NotReproducedWhenARemedyHelpsLessThanTenPercent) {
    auto rows = good_rows();
    rows[2].after = 0.95 * rows[2].before;
    const Judgement j = judge_prof1(rows);
    EXPECT_EQ(j.verdict, Verdict::NotReproduced);
    EXPECT_NE(j.why.find("memory-cap: the remedy"), std::string::npos) << j.why;
    rows[2].after = 0.9 * rows[2].before;  // exactly 10% lower: enough
    EXPECT_EQ(judge_prof1(rows).verdict, Verdict::Reproduced);
}

TEST(ClaimsProf1, NotRunWithoutPipelines) { EXPECT_EQ(judge_prof1({}).verdict, Verdict::NotRun); }

}  // namespace
}  // namespace gl::claims
