// Q-1's verdict: accuracy, size and speed, each against its threshold.
#include "verdicts_l12.hpp"

#include <algorithm>

namespace gl::claims {

namespace {

double best_of(const Q1Measured& m, bool per_channel, bool qat) {
    double best = -1;
    for (const auto& v : m.variants)
        if (v.per_channel == per_channel && v.qat == qat) best = std::max(best, v.accuracy);
    return best;
}

}  // namespace

Judgement judge_q1(const Q1Measured& m) {
    const double ptq = best_of(m, true, false), qat = std::max(best_of(m, true, true), best_of(m, false, true));
    if (ptq < 0 || qat < 0 || m.speeds.empty() || m.int8_file_bytes <= 0)
        return {Verdict::NotRun, "the experiment measured no per-channel PTQ, no QAT, no file or no GEMM"};
    const double ptq_drop = 100.0 * (m.fp32_accuracy - ptq), qat_drop = 100.0 * (m.fp32_accuracy - qat);
    const double ratio = m.float_file_bytes / m.int8_file_bytes;
    double worst_speedup = 1e300, best_speedup = 0;
    for (const auto& s : m.speeds) {
        const double x = s.int8_gops / s.fp32_best_gflops;
        worst_speedup = std::min(worst_speedup, x);
        best_speedup = std::max(best_speedup, x);
    }
    const std::string numbers = "per-channel PTQ " + fixed(ptq_drop, 2) + " points below FP32, QAT " + fixed(qat_drop, 2) +
                                " points, INT8 file " + fixed(ratio, 2) + "x smaller, INT8 GEMM " +
                                fixed(worst_speedup, 2) + "-" + fixed(best_speedup, 2) + "x the best FP32 GEMM";
    if (above_ceiling(best_speedup, m.int8_ceiling))
        return {Verdict::Suspect, numbers + ": a speed-up above the " + fixed(m.int8_ceiling, 0) +
                                      "x that the instructions allow means the timing, not the kernel, is off"};
    std::vector<std::string> failed;
    if (ptq_drop > 1.0) failed.push_back("per-channel PTQ loses more than 1 point");
    if (qat_drop > 0.5) failed.push_back("QAT loses more than 0.5 point");
    if (ratio < 4.0 * 0.95 || ratio > 4.0 * 1.05) failed.push_back("the INT8 file is not 4x smaller within 5%");
    if (worst_speedup < 2.5) failed.push_back("INT8 GEMM is below 2.5x the best FP32 GEMM");
    if (failed.empty()) return {Verdict::Reproduced, numbers + ": every part holds"};
    std::string why = numbers + ": ";
    for (std::size_t i = 0; i < failed.size(); ++i) why += (i ? "; " : "") + failed[i];
    return {Verdict::NotReproduced, why};
}

}  // namespace gl::claims
