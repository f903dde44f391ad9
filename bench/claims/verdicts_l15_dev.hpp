// DEV-1's verdict as a pure function of what claims_l15_dev.cpp measured (tests in
// tests/claims/test_verdicts_l15_dev.cpp feed it made-up measurements for each outcome).
#pragma once

#include <cstdint>

#include "verdicts.hpp"

namespace gl::claims {

/// One way of running a training step on a device: its counted traffic and its time.
struct DeviceStepReading {
    double host_syncs_per_step = 0.0;       ///< times the host waited for the device, per step
    double copies_to_device_per_step = 0.0;  ///< host -> device copies, per step
    double seconds_per_step = 0.0;           ///< median step time
};

/// DEV-1's measurements: the step with the batch copied once and no sync (the default
/// loop), with the loss read every step (`.item()`: one sync), and with the batch copied
/// for each op that reads it. @p on_gpu: the device was a GPU (else the CPU runtime,
/// where launches are synchronous, so a sync waits for nothing).
struct Dev1Measured {
    DeviceStepReading once, item_every_step, batch_per_op;
    bool on_gpu = false;
};

/// The counts must hold everywhere: 0 syncs per step by default, 1 with `.item()`, more
/// copies when the batch is copied per op. Then, on a GPU: Reproduced when both the sync
/// and the extra copies make the step at least 3% slower. Without a GPU: NeedsGpu (the
/// costs are a GPU's), the counts and the CPU runtime's times in the reason.
Judgement judge_dev1(const Dev1Measured& m);

}  // namespace gl::claims
