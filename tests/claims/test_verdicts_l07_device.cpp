// CKPT-3's device half (bench/claims/verdicts_l07_device.cpp) on made-up measurements:
// each outcome is reachable, and each condition flips it.
#include <gtest/gtest.h>

#include "../../bench/claims/verdicts_l07_device.hpp"

namespace gl::claims {
namespace {

Ckpt3DeviceMeasured good(bool on_gpu) {
    Ckpt3DeviceMeasured m;
    m.on_gpu = on_gpu;
    m.buffers_per_step = 64;
    m.raw_calls_per_step = 64;
    m.cached_calls_per_step = 0;
    m.raw_seconds = 3e-3;
    m.cached_seconds = 1e-3;
    return m;
}

TEST(ClaimsCkpt3Device, OnAGpuTheCacheMustBeFaster) {
    EXPECT_EQ(judge_ckpt3_device(good(true)).verdict, Verdict::Reproduced);
    Ckpt3DeviceMeasured slow = good(true);
    slow.cached_seconds = 2.5e-3;  // 1.2x
    EXPECT_EQ(judge_ckpt3_device(slow).verdict, Verdict::NotReproduced);
}

TEST(ClaimsCkpt3Device, WithoutAGpuTheCountsHoldAndTheTimeNeedsOne) {
    const Judgement j = judge_ckpt3_device(good(false));
    EXPECT_EQ(j.verdict, Verdict::NeedsGpu);
    EXPECT_NE(j.why.find("64.00 raw, 0.00 through the warm cache"), std::string::npos) << j.why;
}

TEST(ClaimsCkpt3Device, WrongCountsAreNotReproducedAnywhere) {
    for (bool gpu : {false, true}) {
        Ckpt3DeviceMeasured missed = good(gpu);
        missed.cached_calls_per_step = 1;  // the warm cache went to the runtime
        EXPECT_EQ(judge_ckpt3_device(missed).verdict, Verdict::NotReproduced);
        Ckpt3DeviceMeasured uncounted = good(gpu);
        uncounted.raw_calls_per_step = 0;  // raw allocation not counted
        EXPECT_EQ(judge_ckpt3_device(uncounted).verdict, Verdict::NotReproduced);
        Ckpt3DeviceMeasured nothing = good(gpu);
        nothing.buffers_per_step = nothing.raw_calls_per_step = 0;
        EXPECT_EQ(judge_ckpt3_device(nothing).verdict, Verdict::NotReproduced);
    }
}

}  // namespace
}  // namespace gl::claims
