// ASYNC-1's and DATA-3's verdicts on made-up measurements: each follows its numbers, and
// changing one number flips it.
#include <gtest/gtest.h>

#include "../../bench/claims/verdicts_l15_streams.hpp"

namespace gl::claims {
namespace {

Async1Measured async1_cpu_good() {
    Async1Measured m;
    m.runs = {{1, 10000, 0.0}, {2, 8000, 0.8}, {3, 7800, 0.9}};
    m.no_overlap_sum_us = 10000;
    m.gpu_name = "no GPU here";
    return m;
}

TEST(ClaimsAsync1, TheCpuHalfAloneNeedsAGpu) {
    const Judgement j = judge_async1(async1_cpu_good());
    EXPECT_EQ(j.verdict, Verdict::NeedsGpu) << j.why;
    EXPECT_NE(j.why.find("3 streams overlap 90%"), std::string::npos) << j.why;
}

TEST(ClaimsAsync1, EachCpuConditionCanFailIt) {
    Async1Measured m = async1_cpu_good();
    m.runs[0].overlap_fraction = 0.3;  // one stream "overlapping": the timeline is wrong
    EXPECT_EQ(judge_async1(m).verdict, Verdict::NotReproduced);
    m = async1_cpu_good();
    m.runs[1].overlap_fraction = m.runs[2].overlap_fraction = 0.2;
    EXPECT_EQ(judge_async1(m).verdict, Verdict::NotReproduced);
    m = async1_cpu_good();
    m.runs[1].wall_us = m.runs[2].wall_us = 9900;  // 1% saved
    EXPECT_EQ(judge_async1(m).verdict, Verdict::NotReproduced);
}

TEST(ClaimsAsync1, WithAGpuBothHalvesDecide) {
    Async1Measured m = async1_cpu_good();
    m.gpu_name = "NVIDIA H200";
    m.gpu_speedup = 1.8;
    EXPECT_EQ(judge_async1(m).verdict, Verdict::Reproduced);
    m.gpu_speedup = 1.05;
    EXPECT_EQ(judge_async1(m).verdict, Verdict::NotReproduced);
}

TEST(ClaimsAsync1, ImpossibleReadingsAreSuspectOrNotRun) {
    Async1Measured m = async1_cpu_good();
    m.runs[2].overlap_fraction = 1.5;
    EXPECT_EQ(judge_async1(m).verdict, Verdict::Suspect);
    m.runs = {{2, 8000, 0.8}};
    EXPECT_EQ(judge_async1(m).verdict, Verdict::NotRun);
}

Data3Measured data3_cpu_good() {
    Data3Measured m;
    m.pinned_gbs = 8.0;
    m.pageable_gbs = 4.0;
    m.pinned_call_fraction = 0.05;
    m.pageable_call_fraction = 1.0;
    m.gpu_name = "no GPU here";
    return m;
}

TEST(ClaimsData3, TheCpuHalfAloneNeedsAGpu) {
    const Judgement j = judge_data3(data3_cpu_good());
    EXPECT_EQ(j.verdict, Verdict::NeedsGpu) << j.why;
    EXPECT_NE(j.why.find("2.00x"), std::string::npos) << j.why;
}

TEST(ClaimsData3, EachCpuConditionCanFailIt) {
    Data3Measured m = data3_cpu_good();
    m.pageable_gbs = 7.5;  // pinned barely faster
    EXPECT_EQ(judge_data3(m).verdict, Verdict::NotReproduced);
    m = data3_cpu_good();
    m.pinned_call_fraction = 0.95;  // the "non-blocking" copy blocked
    EXPECT_EQ(judge_data3(m).verdict, Verdict::NotReproduced);
    m = data3_cpu_good();
    m.pageable_call_fraction = 0.1;  // a pageable copy that did not make the host wait
    EXPECT_EQ(judge_data3(m).verdict, Verdict::NotReproduced);
    m = data3_cpu_good();
    m.pinned_gbs = 0;
    EXPECT_EQ(judge_data3(m).verdict, Verdict::NotRun);
}

TEST(ClaimsData3, WithAGpuBothHalvesDecide) {
    Data3Measured m = data3_cpu_good();
    m.gpu_name = "NVIDIA H200";
    m.gpu_pinned_gbs = 50.0;
    m.gpu_pageable_gbs = 20.0;
    EXPECT_EQ(judge_data3(m).verdict, Verdict::Reproduced);
    m.gpu_pageable_gbs = 48.0;
    EXPECT_EQ(judge_data3(m).verdict, Verdict::NotReproduced);
}

}  // namespace
}  // namespace gl::claims
