// The profiler commands of the gradlab program (claim PROF-1): `profile` (a bad pipeline
// of lab 10, profiled and diagnosed, optionally with its remedy), `profile merge` (one
// timeline from the traces of several ranks) and the output of `train --profile DIR`.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "profiler/analysis.hpp"
#include "profiler/profiler.hpp"

namespace gl::cli {

/// Options of `gradlab profile`.
struct ProfileArgs {
    std::string pipeline = "tiny-batch";  ///< which bad pipeline (pipelines_l10.hpp)
    bool remedy = false;                  ///< apply the lecture's remedy
    std::string out = "profile";          ///< folder for the table, the trace and the diagnosis
};

/// Writes into folder @p dir (created if missing): trace.json (Chrome Trace Event Format,
/// for Perfetto or chrome://tracing), ops.txt (the per-op table), memory.csv (the memory
/// timeline) and diagnosis.txt; prints the top of the table and the diagnosis. Returns the
/// diagnosis.
prof::Diagnosis write_profile(const prof::Trace& trace, const prof::DiagnosisRules& rules, const std::string& dir,
                              const std::string& trace_name = "trace.json");

/// `train --profile DIR`: profiles a run's steps (one warmup step, then @p steps kept) and
/// writes the profile when finish() is called. Does nothing with an empty @p dir.
class TrainProfile {
public:
    /// Starts profiling into @p dir as rank @p rank (its trace is trace_rank<R>.json when
    /// @p rank > 0, so the ranks of an MPI run can share a folder).
    TrainProfile(const std::string& dir, int rank = 0, int steps = 20);
    /// Stops the profiler and writes the profile (rank 0 prints it).
    void finish();

private:
    std::string dir_;
    int rank_;
    std::unique_ptr<prof::Profiler> profiler_;
};

/// `gradlab profile`: runs the pipeline under the profiler and writes its profile.
int cmd_profile(const ProfileArgs& a);

/// `gradlab profile merge`: one trace from the traces of several ranks, aligned on the
/// steady clock they share, each rank on its own track (pid).
int cmd_profile_merge(const std::vector<std::string>& inputs, const std::string& out);

}  // namespace gl::cli
