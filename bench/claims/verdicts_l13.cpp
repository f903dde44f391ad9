#include "verdicts_l13.hpp"

namespace gl::claims {

Judgement judge_jit1(const StepVariant& eager, const StepVariant& captured, const StepVariant& optimized,
                     double max_weight_difference) {
    const bool fewer_bytes = optimized.bytes_moved < captured.bytes_moved;
    const bool fewer_kernels = optimized.kernels < captured.kernels;
    const bool lower_peak = optimized.peak_bytes < eager.peak_bytes;
    const bool no_allocations = optimized.allocations == 0 && eager.allocations > 0;
    const bool equal = max_weight_difference <= 1e-4;
    const bool ok = fewer_bytes && fewer_kernels && lower_peak && no_allocations && equal;
    const auto ratio = [](double a, double b) { return b > 0 ? fixed(a / b, 2) : std::string("n/a"); };
    std::string why = "fusion: " + std::to_string(optimized.kernels) + " kernels instead of " +
                      std::to_string(captured.kernels) + ", " + ratio(optimized.bytes_moved, captured.bytes_moved) +
                      "x the bytes" + (fewer_bytes && fewer_kernels ? "" : " (NOT fewer)") + "; planning: peak " +
                      ratio(optimized.peak_bytes, eager.peak_bytes) + "x eager's" + (lower_peak ? "" : " (NOT lower)") +
                      ", " + std::to_string(optimized.allocations) + " allocations per step against eager's " +
                      std::to_string(eager.allocations) + (no_allocations ? "" : " (NOT none against some)") +
                      "; weights after the same steps differ by at most " + fixed(max_weight_difference * 1e6, 2) +
                      "e-6" + (equal ? "" : " (NOT equal: > 1e-4)");
    return {ok ? Verdict::Reproduced : Verdict::NotReproduced, why};
}

Judgement judge_deploy1(const Deploy1Measured& m) {
    const bool aot_equal = m.eager_vs_aot <= 1e-5;
    const bool aot_static = m.aot_allocations == 0 && m.eager_allocations > 0;
    const std::string ours = "our runtime on the ONNX file differs from eager by at most " +
                             fixed(m.eager_vs_aot * 1e6, 2) + "e-6" + (aot_equal ? "" : " (NOT within 1e-5)") + " and makes " +
                             std::to_string(m.aot_allocations) + " tensor allocations per batch against eager's " +
                             std::to_string(m.eager_allocations) + (aot_static ? "" : " (NOT none against some)");
    const std::string tradeoff = "; JIT vs AOT: startup (to the first output) " + fixed(m.jit_startup_seconds * 1e3, 2) +
                                 " ms tracing the model's code vs " + fixed(m.aot_startup_seconds * 1e3, 2) +
                                 " ms reading the file, then " + fixed(m.aot_batch_seconds * 1e3, 3) +
                                 " ms per batch against eager's " + fixed(m.eager_batch_seconds * 1e3, 3) + " ms (not judged)";
    if (!m.ort_ran)
        return {aot_equal && aot_static ? Verdict::NotRun : Verdict::NotReproduced,
                ours + "; ONNX Runtime did not run (" + m.ort_why_not + ")" + tradeoff};
    const bool ort_equal = m.checker_ok && m.aot_vs_ort <= 1e-5;
    return {aot_equal && aot_static && ort_equal ? Verdict::Reproduced : Verdict::NotReproduced,
            ours + "; onnx.checker " + (m.checker_ok ? "accepts" : "REJECTS") + " the file and ONNX Runtime differs from "
            "ours by at most " + fixed(m.aot_vs_ort * 1e6, 2) + "e-6" + (ort_equal ? "" : " (NOT within 1e-5)") + tradeoff};
}

}  // namespace gl::claims
