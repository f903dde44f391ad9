// Q-1's verdict: accuracy, size and speed, each against its threshold.
#include "verdicts_l12.hpp"

#include <algorithm>
#include <cmath>
#include <string>

namespace gl::claims {

namespace {

double best_of(const Q1Model& m, bool per_channel, bool qat) {
    double best = -1;
    for (const auto& v : m.variants)
        if (v.per_channel == per_channel && v.qat == qat) best = std::max(best, v.accuracy);
    return best;
}

// "0.25 points below FP32" for a drop of 0.25 points of accuracy, "0.11 points above FP32"
// for a drop of -0.11 (quantized at least as good as float).
std::string against_fp32(double drop) {
    return fixed(std::abs(drop), 2) + (drop > 0 ? " points below FP32" : " points above FP32");
}

}  // namespace

Judgement judge_q1(const Q1Measured& m) {
    if (m.models.size() < 2 || m.speeds.empty())
        return {Verdict::NotRun, "the experiment measured fewer than two models (the MLP and the CNN) or no GEMM"};
    std::string numbers;
    std::vector<std::string> failed;
    for (const Q1Model& model : m.models) {
        const double ptq = best_of(model, true, false), qat = std::max(best_of(model, true, true), best_of(model, false, true));
        if (ptq < 0 || qat < 0 || model.int8_file_bytes <= 0)
            return {Verdict::NotRun, model.name + ": no per-channel PTQ, no QAT or no INT8 file was measured"};
        const double ptq_drop = 100.0 * (model.fp32_accuracy - ptq), qat_drop = 100.0 * (model.fp32_accuracy - qat);
        const double ratio = model.float_file_bytes / model.int8_file_bytes;
        numbers += model.name + ": per-channel PTQ " + against_fp32(ptq_drop) + ", QAT " + against_fp32(qat_drop) +
                   ", INT8 file " + fixed(ratio, 2) + "x smaller; ";
        if (ptq_drop > 1.0) failed.push_back(model.name + " per-channel PTQ loses more than 1 point");
        if (qat_drop > 0.5) failed.push_back(model.name + " QAT loses more than 0.5 point");
        if (ratio < 4.0 * 0.95 || ratio > 4.0 * 1.05) failed.push_back(model.name + " INT8 file is not 4x smaller within 5%");
    }
    double worst_speedup = 1e300, best_speedup = 0, worst_vs_onednn = 1e300;
    for (const auto& s : m.speeds) {
        const double x = s.int8_gops / s.fp32_best_gflops;
        worst_speedup = std::min(worst_speedup, x);
        best_speedup = std::max(best_speedup, x);
        if (s.onednn_int8_gops > 0) worst_vs_onednn = std::min(worst_vs_onednn, s.int8_gops / s.onednn_int8_gops);
    }
    numbers += "INT8 GEMM " + fixed(worst_speedup, 2) + "-" + fixed(best_speedup, 2) + "x the best FP32 GEMM";
    if (worst_vs_onednn < 1e300) numbers += ", at least " + fixed(worst_vs_onednn, 2) + "x oneDNN's faster INT8 path";
    if (above_ceiling(best_speedup, m.int8_ceiling))
        return {Verdict::Suspect, numbers + ": a speed-up above the " + fixed(m.int8_ceiling, 0) +
                                      "x that the instructions allow means the timing, not the kernel, is off"};
    if (worst_speedup < 2.5) failed.push_back("INT8 GEMM is below 2.5x the best FP32 GEMM");
    if (worst_vs_onednn < 1.0) failed.push_back("INT8 GEMM is slower than oneDNN's INT8 GEMM or matmul");
    if (failed.empty()) return {Verdict::Reproduced, numbers + ": every part holds"};
    std::string why = numbers + ": ";
    for (std::size_t i = 0; i < failed.size(); ++i) why += (i ? "; " : "") + failed[i];
    return {Verdict::NotReproduced, why};
}

}  // namespace gl::claims
