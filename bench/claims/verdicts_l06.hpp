// Verdicts of Lab 06's claims (DATA-1, DATA-2, DATA-4), computed from measurements only;
// tests/claims/test_verdicts_l06.cpp gives each both outcomes.
#pragma once

#include <string>
#include <vector>

#include "verdicts.hpp"

namespace gl::claims {

/// One worker count of DATA-1: the measured step and the model's prediction.
struct StepReading {
    int workers = 0;               ///< 0: the training thread loads each batch itself
    double step_seconds = 0;       ///< measured wall time per step (load + train)
    double predicted_seconds = 0;  ///< the model: L + C without workers, else max(L / w, C, (L + C) / cores)
    double wait_fraction = 0;      ///< the share of the step the loop waited for data
};

/// The share of a step the model says the loop must wait for data with @p workers
/// workers: 1 without workers (it loads every batch itself; the wait is the load,
/// L / (L + C) of the step), else the part of max(L / w, C) that compute does not fill,
/// 1 - C / max(L / w, C): 0 whenever L / w <= C.
double predicted_wait_fraction(int workers, double load_seconds, double compute_seconds);

/// DATA-1: reproduced when without workers a step costs about load + compute (within
/// 30%), prefetching with the best worker count is at least 1.3x faster than none, every
/// count with workers lies within 30% of the model, and with 2 workers the loop waits
/// for data at most 10% of the step more than the model's predicted_wait_fraction (the
/// issue's acceptance: with L <= C, 2 workers hide the loading, a wait under 10%).
/// @p load_seconds and @p compute_seconds are the measured L and C per batch.
Judgement judge_data1(const std::vector<StepReading>& readings, double load_seconds, double compute_seconds);

/// DATA-2: throughput (batches/s) at 0, 1, ..., 2x cores workers. Reproduced when the
/// best count lies between cores - 1 and cores + 1 (at least 1) and 2x cores is no faster
/// than the best (more than the cores does not help).
Judgement judge_data2(const std::vector<double>& batches_per_second, int cores);

/// DATA-4: the transforms against torchvision. Reproduced when the pipeline ran with
/// the same batches for 0 and 2 workers and every comparison that should match is within
/// 1/255 (and the known antialias difference is seen); torchvision absent: NotRun.
struct Data4Measured {
    bool same_batches_any_workers = false;  ///< augmented batches equal with 0 and 2 workers
    bool torchvision_available = false;     ///< the peer comparison could run
    double worst_matching_difference = 0;   ///< largest difference where they should match
    double antialias_difference = 0;        ///< the difference where they should not (shrinking, antialias=True)
};
/// DATA-4's verdict (see Data4Measured).
Judgement judge_data4(const Data4Measured& m);

}  // namespace gl::claims
