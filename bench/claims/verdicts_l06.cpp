#include "verdicts_l06.hpp"

#include <algorithm>
#include <cmath>

namespace gl::claims {

double predicted_wait_fraction(int workers, double load_seconds, double compute_seconds) {
    if (workers <= 0) return load_seconds / (load_seconds + compute_seconds);
    const double batch_every = load_seconds / workers;
    return batch_every <= compute_seconds ? 0.0 : 1.0 - compute_seconds / batch_every;
}

Judgement judge_data1(const std::vector<StepReading>& readings, double load_seconds, double compute_seconds) {
    const auto two = std::find_if(readings.begin(), readings.end(), [](const StepReading& r) { return r.workers == 2; });
    if (readings.size() < 2 || readings[0].workers != 0 || two == readings.end() || !(load_seconds > 0) ||
        !(compute_seconds > 0))
        return {Verdict::NotRun, "DATA-1 needs the step time without workers and with 2 workers, and the measured "
                                 "load and compute per batch"};
    const StepReading& serial = readings[0];
    const auto off = [](const StepReading& r) { return std::abs(r.step_seconds / r.predicted_seconds - 1.0); };
    const bool serial_is_sum = off(serial) <= 0.3;
    double best = serial.step_seconds, worst_off = 0;
    int best_workers = 0;
    for (const StepReading& r : readings) {
        if (r.workers == 0) continue;
        worst_off = std::max(worst_off, off(r));
        if (r.step_seconds < best) best = r.step_seconds, best_workers = r.workers;
    }
    const double speedup = serial.step_seconds / best;
    const double wait_allowed = predicted_wait_fraction(2, load_seconds, compute_seconds) + 0.10;
    const bool hidden = two->wait_fraction < wait_allowed;
    const bool ok = serial_is_sum && speedup >= 1.3 && worst_off <= 0.3 && hidden;
    return {ok ? Verdict::Reproduced : Verdict::NotReproduced,
            "without workers a step took " + fixed(serial.step_seconds * 1e3, 2) + " ms against load + compute " +
                fixed(serial.predicted_seconds * 1e3, 2) + " ms (" + (serial_is_sum ? "within" : "outside") +
                " 30%); the fastest step was with " + std::to_string(best_workers) + " worker(s), " + fixed(speedup, 2) +
                "x the speed without workers (>= 1.3x needed); every count with workers within " + fixed(100 * worst_off, 0) +
                "% of max(L / w, C, (L + C) / cores) (<= 30% needed); with 2 workers the loop waited for data " +
                fixed(100 * two->wait_fraction, 1) + "% of the step (under " + fixed(100 * wait_allowed, 0) +
                "% needed: the model's " + fixed(100 * (wait_allowed - 0.10), 0) + "% for L = " +
                fixed(load_seconds * 1e3, 2) + " ms, C = " + fixed(compute_seconds * 1e3, 2) + " ms, plus 10%)"};
}

Judgement judge_data2(const std::vector<double>& batches_per_second, int cores) {
    const int top = 2 * cores;
    if (cores < 1 || static_cast<int>(batches_per_second.size()) != top + 1)
        return {Verdict::NotRun, "DATA-2 needs the throughput at 0 .. 2 x cores workers"};
    const auto best_it = std::max_element(batches_per_second.begin() + 1, batches_per_second.end());
    const int best = static_cast<int>(best_it - batches_per_second.begin());
    const bool near_cores = best >= std::max(1, cores - 1) && best <= cores + 1;
    const bool more_does_not_help = batches_per_second[static_cast<std::size_t>(top)] <= *best_it;
    const bool ok = near_cores && more_does_not_help;
    return {ok ? Verdict::Reproduced : Verdict::NotReproduced,
            "the best count was " + std::to_string(best) + " worker(s) on " + std::to_string(cores) + " cores (" +
                fixed(*best_it, 1) + " batches/s; " + (near_cores ? "within" : "outside") +
                " cores +- 1); at 2x the cores (" + std::to_string(top) + ") " +
                fixed(batches_per_second[static_cast<std::size_t>(top)], 1) + " batches/s, " +
                fixed(100.0 * (batches_per_second[static_cast<std::size_t>(top)] / *best_it - 1.0), 0) +
                "% against the best"};
}

Judgement judge_data4(const Data4Measured& m) {
    if (!m.same_batches_any_workers)
        return {Verdict::NotReproduced, "the augmented batches differed between 0 and 2 workers"};
    if (!m.torchvision_available)
        return {Verdict::NotRun, "the pipeline composes and gives the same batches with 0 and 2 workers, but torchvision "
                                 "is not installed, so the equivalence was not checked (install python3-torchvision)"};
    const bool match = m.worst_matching_difference <= 1.0 / 255.0;
    const bool antialias_seen = m.antialias_difference > 0.1;
    return {match && antialias_seen ? Verdict::Reproduced : Verdict::NotReproduced,
            "every transform equals torchvision's with the same parameters within " +
                fixed(m.worst_matching_difference * 255.0, 3) + "/255 (<= 1/255 needed); torchvision's antialias=True "
                "differs by " + fixed(m.antialias_difference, 3) + " when shrinking 4x (" +
                (antialias_seen ? "seen" : "NOT seen") + "); same batches with 0 and 2 workers"};
}

}  // namespace gl::claims
