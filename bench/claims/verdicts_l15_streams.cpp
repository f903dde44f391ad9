// The verdicts of ASYNC-1 and DATA-3 (see verdicts_l15_streams.hpp).
#include "verdicts_l15_streams.hpp"

#include <algorithm>

namespace gl::claims {

namespace {
Judgement suspect_reading(const std::string& what) {
    return {Verdict::Suspect, what + ", which no run of this experiment can produce: the measurement is wrong"};
}
}  // namespace

Judgement judge_async1(const Async1Measured& m) {
    const Async1Run* one = nullptr;
    const Async1Run* best = nullptr;
    for (const Async1Run& r : m.runs) {
        if (r.overlap_fraction > 1.0 + 1e-9 || r.overlap_fraction < 0)
            return suspect_reading("an overlap fraction of " + fixed(r.overlap_fraction, 2));
        if (r.streams == 1) one = &r;
        else if (!best || r.wall_us < best->wall_us) best = &r;
    }
    if (!one || !best || m.no_overlap_sum_us <= 0)
        return {Verdict::NotRun, "the experiment needs a 1-stream run and a multi-stream run"};
    const double saved = 1.0 - best->wall_us / m.no_overlap_sum_us;
    const bool serial = one->overlap_fraction <= 0.05;
    const bool overlaps = best->overlap_fraction >= 0.5;
    const bool faster = saved >= 0.03;
    const bool cpu_half = serial && overlaps && faster;
    const std::string cpu_text =
        "CPU runtime: 1 stream overlaps " + fixed(100 * one->overlap_fraction, 0) + "% of its copies with kernels" +
        (serial ? "" : " (expected none)") + "; " + std::to_string(best->streams) + " streams overlap " +
        fixed(100 * best->overlap_fraction, 0) + "%" + (overlaps ? "" : " (expected >= 50%)") + " and take " +
        fixed(100 * saved, 1) + "% less than the no-overlap sum" + (faster ? "" : " (expected >= 3%)");
    if (!m.gpu_speedup)
        return {cpu_half ? Verdict::NeedsGpu : Verdict::NotReproduced,
                cpu_text + "; the GPU half needs a GPU (" + m.gpu_name + ")"};
    const bool gpu_half = *m.gpu_speedup >= 1.2;
    return {cpu_half && gpu_half ? Verdict::Reproduced : Verdict::NotReproduced,
            cpu_text + "; " + m.gpu_name + ": streams make the pipeline " + fixed(*m.gpu_speedup, 2) + "x faster" +
                (gpu_half ? "" : " (expected >= 1.2x)")};
}

Judgement judge_data3(const Data3Measured& m) {
    if (m.pinned_gbs <= 0 || m.pageable_gbs <= 0) return {Verdict::NotRun, "no copy bandwidth was measured"};
    const double ratio = m.pinned_gbs / m.pageable_gbs;
    const bool faster = ratio >= 1.2;
    const bool pinned_async = m.pinned_call_fraction < 0.5;
    const bool pageable_waits = m.pageable_call_fraction >= 0.9;
    const bool cpu_half = faster && pinned_async && pageable_waits;
    // The CPU runtime copies pageable memory through a staging buffer and makes the host
    // wait for it, as CUDA does: so the CPU half checks that the runtime models the
    // mechanism (and that the measurement sees it), not the hardware; only the GPU half can
    // reproduce the claim.
    const std::string cpu_text =
        "CPU runtime (a model of CUDA's pageable staging, not the hardware): pinned copies " + fixed(m.pinned_gbs, 1) + " GB/s, pageable " + fixed(m.pageable_gbs, 1) +
        " GB/s (" + fixed(ratio, 2) + "x" + (faster ? "" : ", expected >= 1.2x") +
        "); a non-blocking copy returns after " + fixed(100 * m.pinned_call_fraction, 0) +
        "% of its time from pinned memory" + (pinned_async ? "" : " (expected < 50%)") + " and after " +
        fixed(100 * m.pageable_call_fraction, 0) + "% from pageable memory" +
        (pageable_waits ? " (the host waits)" : " (expected the host to wait: >= 90%)");
    if (!m.gpu_pinned_gbs || !m.gpu_pageable_gbs)
        return {cpu_half ? Verdict::NeedsGpu : Verdict::NotReproduced,
                cpu_text + "; the GPU half needs a GPU (" + m.gpu_name + ")"};
    const double gpu_ratio = *m.gpu_pinned_gbs / *m.gpu_pageable_gbs;
    const bool gpu_half = gpu_ratio >= 1.2;
    return {cpu_half && gpu_half ? Verdict::Reproduced : Verdict::NotReproduced,
            cpu_text + "; " + m.gpu_name + ": pinned " + fixed(*m.gpu_pinned_gbs, 1) + " GB/s, pageable " +
                fixed(*m.gpu_pageable_gbs, 1) + " GB/s (" + fixed(gpu_ratio, 2) + "x" +
                (gpu_half ? "" : ", expected >= 1.2x") + ")"};
}

}  // namespace gl::claims
