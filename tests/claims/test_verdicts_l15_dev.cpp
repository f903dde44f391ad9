// DEV-1's verdict (bench/claims/verdicts_l15_dev.cpp) on made-up measurements: each outcome
// is reachable, and each condition flips it.
#include <gtest/gtest.h>

#include "../../bench/claims/verdicts_l15_dev.hpp"

namespace gl::claims {
namespace {

Dev1Measured good(bool on_gpu) {
    Dev1Measured m;
    m.on_gpu = on_gpu;
    m.once = {0.0, 2.0, 1.0e-3};
    m.item_every_step = {1.0, 2.0, 1.2e-3};
    m.batch_per_op = {0.0, 3.0, 1.1e-3};
    return m;
}

TEST(ClaimsDev1, OnAGpuTheSyncAndTheCopiesCostTime) {
    EXPECT_EQ(judge_dev1(good(true)).verdict, Verdict::Reproduced);
    Dev1Measured free_sync = good(true);
    free_sync.item_every_step.seconds_per_step = 1.01e-3;
    EXPECT_EQ(judge_dev1(free_sync).verdict, Verdict::NotReproduced);
    Dev1Measured free_copies = good(true);
    free_copies.batch_per_op.seconds_per_step = 0.99e-3;
    EXPECT_EQ(judge_dev1(free_copies).verdict, Verdict::NotReproduced);
}

TEST(ClaimsDev1, WithoutAGpuTheCountsHoldAndTheCostsNeedOne) {
    const Judgement j = judge_dev1(good(false));
    EXPECT_EQ(j.verdict, Verdict::NeedsGpu);
    EXPECT_NE(j.why.find("0.00 in the default loop"), std::string::npos) << j.why;
}

TEST(ClaimsDev1, WrongCountsAreNotReproducedAnywhere) {
    for (bool gpu : {false, true}) {
        Dev1Measured synced = good(gpu);
        synced.once.host_syncs_per_step = 1.0;  // the default loop waited for the device
        EXPECT_EQ(judge_dev1(synced).verdict, Verdict::NotReproduced);
        Dev1Measured uncounted = good(gpu);
        uncounted.item_every_step.host_syncs_per_step = 0.0;  // .item() did not count as a sync
        EXPECT_EQ(judge_dev1(uncounted).verdict, Verdict::NotReproduced);
        Dev1Measured same_copies = good(gpu);
        same_copies.batch_per_op.copies_to_device_per_step = 2.0;
        EXPECT_EQ(judge_dev1(same_copies).verdict, Verdict::NotReproduced);
    }
}

}  // namespace
}  // namespace gl::claims
