// Verdicts of Lab 09's claims; see verdicts_l09.hpp.
#include "verdicts_l09.hpp"

#include <cmath>

#include "claims.hpp"

namespace gl::claims {

Judgement judge_mp1(const Mp1Measured& m) {
    const bool equal = m.max_difference <= m.tolerance;
    int wrong_bytes = 0;
    for (const SchemeBytes& b : m.bytes) wrong_bytes += b.counted != b.formula;
    // A model not trained (single < 0) is not judged; one trained must match split both ways.
    const auto matches = [&](double single, double tensor, double pipeline) {
        const auto near = [&](double a) { return a >= 0 && std::fabs(a - single) <= m.accuracy_tolerance; };
        return single < 0 || (near(tensor) && near(pipeline));
    };
    const bool trained = matches(m.single_accuracy, m.tensor_accuracy, m.pipeline_accuracy) &&
                         matches(m.deep_single_accuracy, m.deep_tensor_accuracy, m.deep_pipeline_accuracy);
    const bool ok = equal && wrong_bytes == 0 && !m.bytes.empty() && trained;
    std::string why = std::string(equal ? "the split model equals the unsplit one within " : "the split model differs by more than ") +
                      fixed(m.tolerance, 6) + "; " +
                      (m.bytes.empty() ? std::string("no bytes were counted")
                                       : std::to_string(m.bytes.size() - static_cast<std::size_t>(wrong_bytes)) + " of " +
                                             std::to_string(m.bytes.size()) + " counted byte totals equal their formula");
    if (m.single_accuracy >= 0)
        why += std::string("; tensor- and pipeline-parallel training") +
               (m.deep_single_accuracy >= 0 ? " (SimpleNet and the deep MLP) " : " ") +
               (trained ? "reach" : "do NOT reach") + " the single process's accuracy within " +
               fixed(m.accuracy_tolerance, 3);
    return {ok ? Verdict::Reproduced : Verdict::NotReproduced, why};
}

Judgement judge_mp2(const std::vector<BubbleRun>& calibrated, const std::vector<StashRun>& memory, double relative) {
    int far = 0;
    double worst = 0.0;
    for (const BubbleRun& b : calibrated) {
        const double err = std::fabs(b.measured - b.ideal) / b.ideal;
        worst = std::max(worst, err);
        far += err > relative;
    }
    int checked = 0, above = 0;
    for (const StashRun& s : memory) {
        if (s.micro_batches <= s.stages) continue;
        ++checked;
        above += s.one_f_one_b_bytes >= s.gpipe_bytes;
    }
    const bool ok = !calibrated.empty() && far == 0 && checked > 0 && above == 0;
    return {ok ? Verdict::Reproduced : Verdict::NotReproduced,
            std::to_string(calibrated.size() - static_cast<std::size_t>(far)) + " of " +
                std::to_string(calibrated.size()) + " calibrated runs within " + fixed(100 * relative, 0) +
                "% of (p-1)/(m+p-1) (worst " + fixed(100 * worst, 1) + "%); 1F1B stashes less than GPipe in " +
                std::to_string(checked - above) + " of " + std::to_string(checked) + " runs with m > p"};
}

}  // namespace gl::claims
