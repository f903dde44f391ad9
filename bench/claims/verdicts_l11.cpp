// CONV-1 and CONV-2 verdicts.
#include "verdicts_l11.hpp"

#include <algorithm>
#include <cmath>
#include <set>

namespace gl::claims {
namespace {

// The name of the fastest algorithm of one shape, and its time.
std::pair<std::string, double> fastest(const ConvShapeTiming& t) {
    std::pair<std::string, double> best{"", INFINITY};
    for (const auto& [name, s] : t.seconds)
        if (s < best.second) best = {name, s};
    return best;
}

double seconds_of(const ConvShapeTiming& t, const std::string& name) {
    for (const auto& [n, s] : t.seconds)
        if (n == name) return s;
    return INFINITY;
}

}  // namespace

Judgement judge_conv1(const Conv1Measured& m) {
    const bool agree = m.worst_float32_error <= 1e-4;
    const bool counts = m.winograd_f2_ratio == 2.25 && m.winograd_f4_ratio == 4.0;
    std::set<std::string> winners;
    bool tuner_ok = !m.timings.empty();
    std::string tuner_misses;
    for (const auto& t : m.timings) {
        const auto [name, best] = fastest(t);
        winners.insert(name);
        if (seconds_of(t, t.autotuner_pick) > 1.25 * best) {
            tuner_ok = false;
            tuner_misses += (tuner_misses.empty() ? "" : "; ") + t.shape + ": picked " + t.autotuner_pick +
                            ", fastest " + name;
        }
    }
    const bool depends = winners.size() >= 2;
    std::string names;
    for (const auto& w : winners) names += (names.empty() ? "" : ", ") + w;
    std::string why = std::string(agree ? "all algorithms agree" : "the algorithms do NOT agree") +
                      " (worst float32 relative error " + testkit::scientific(m.worst_float32_error, 1) + ", 1e-4 allowed); Winograd counts " +
                      fixed(m.winograd_f2_ratio, 2) + "x and " + fixed(m.winograd_f4_ratio, 2) + "x fewer multiplies" +
                      (counts ? "" : " (2.25x and 4x expected)") + "; fastest: " + names +
                      (depends ? " (it depends on the shape)" : " (the same on every shape)") + "; " +
                      (tuner_ok ? "the autotuner's pick is within 25% of the fastest on every shape"
                                : "the autotuner missed: " + tuner_misses);
    return {agree && counts && depends && tuner_ok ? Verdict::Reproduced : Verdict::NotReproduced, why};
}

Judgement judge_conv2(double cnn_accuracy, double mlp_accuracy, int epochs) {
    const bool ok = cnn_accuracy >= mlp_accuracy + 0.01;
    return {ok ? Verdict::Reproduced : Verdict::NotReproduced,
            "after " + std::to_string(epochs) + " epochs the CNN's test accuracy is " + fixed(cnn_accuracy, 4) +
                " and the MLP's " + fixed(mlp_accuracy, 4) + (ok ? "" : ": the CNN is NOT ahead by one point")};
}

}  // namespace gl::claims
