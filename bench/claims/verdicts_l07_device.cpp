#include "verdicts_l07_device.hpp"

namespace gl::claims {

Judgement judge_ckpt3_device(const Ckpt3DeviceMeasured& m) {
    const bool counts_hold = m.buffers_per_step > 0 && m.raw_calls_per_step == m.buffers_per_step &&
                             m.cached_calls_per_step == 0.0;
    const std::string counts = "device allocations per step of " + fixed(m.buffers_per_step, 0) + " buffers: " +
                               fixed(m.raw_calls_per_step, 2) + " raw, " + fixed(m.cached_calls_per_step, 2) +
                               " through the warm cache";
    if (!counts_hold)
        return {Verdict::NotReproduced, "the counts are not what the cache promises (one runtime call per buffer raw, "
                                        "none cached): " + counts};
    const double speedup = m.raw_seconds / m.cached_seconds;
    const std::string times = "cached " + fixed(speedup, 2) + "x faster than raw";
    if (!m.on_gpu)
        return {Verdict::NeedsGpu, counts + "; on the CPU runtime a device allocation is a host malloc, not "
                                            "cudaMalloc's cost and device sync (" + times + " here)"};
    const bool ok = speedup >= 1.5;
    return {ok ? Verdict::Reproduced : Verdict::NotReproduced,
            counts + "; on the GPU " + times + (ok ? " (>= 1.5x needed)" : ": NOT >= 1.5x")};
}

}  // namespace gl::claims
