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

}  // namespace gl::claims
