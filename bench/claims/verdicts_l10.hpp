// Verdicts of lab 10's claim (profiling), computed from measurements only.
#pragma once

#include <string>
#include <vector>

#include "verdicts.hpp"

namespace gl::claims {

// ---- PROF-1 ------------------------------------------------------------------------------

/// One bad pipeline as PROF-1 measures it: what was planted, what the diagnosis named,
/// and its metric (lower is better) before and after the remedy.
struct Prof1Row {
    std::string pipeline;   ///< "tiny-batch", ...
    std::string planted;    ///< the planted problem's name (prof::problem_name)
    std::string diagnosed;  ///< what the diagnosis of the bad pipeline's profile named
    std::string metric;     ///< "seconds per sample", "peak bytes", ...
    double before = 0.0;    ///< the metric of the bad pipeline
    double after = 0.0;     ///< the metric with the remedy applied
};

/// A remedy helps when it lowers the metric by at least this fraction (10%): a timed
/// metric's noise on a shared machine stays below that, counted metrics fall by far more.
inline constexpr double kProf1MinGain = 0.10;

/// Reproduced when there is at least one row, every diagnosis names its planted problem,
/// and every remedy lowers its metric by kProf1MinGain or more; the reason names each
/// row that fails.
Judgement judge_prof1(const std::vector<Prof1Row>& rows);

}  // namespace gl::claims
