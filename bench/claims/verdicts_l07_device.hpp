// CKPT-3's device half as a pure function of what claims_l07_device.cpp measured (tests in
// tests/claims/test_verdicts_l07_device.cpp feed it made-up measurements).
#pragma once

#include "verdicts.hpp"

namespace gl::claims {

/// A step's worth of device buffers allocated, written and freed, through the device's
/// caching allocator and through raw device allocation (cudaMalloc / cudaFree each time).
struct Ckpt3DeviceMeasured {
    double buffers_per_step = 0.0;       ///< allocations the step asks for
    double raw_calls_per_step = 0.0;     ///< runtime allocations counted without the cache
    double cached_calls_per_step = 0.0;  ///< runtime allocations counted through the cache
    double raw_seconds = 0.0;            ///< median step time, raw
    double cached_seconds = 0.0;         ///< median step time, cached
    bool on_gpu = false;                 ///< timed on a GPU (else on the CPU runtime)
};

/// The counts must hold everywhere: raw allocation calls the runtime once per buffer, the
/// warm cache never. Then on a GPU: Reproduced when the cached step is >= 1.5x faster.
/// Without one: NeedsGpu (a CPU-runtime malloc is not cudaMalloc's cost), times in the reason.
Judgement judge_ckpt3_device(const Ckpt3DeviceMeasured& m);

}  // namespace gl::claims
