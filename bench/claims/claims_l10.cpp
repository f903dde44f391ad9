// Lab 10's claim (profiling): PROF-1. Five deliberately bad pipelines (pipelines_l10.hpp),
// each profiled, diagnosed by the rules of profiler/analysis.hpp from its own profile,
// fixed with the lecture's remedy, and measured again.
#include <sstream>

#include "claims.hpp"
#include "pipelines_l10.hpp"
#include "verdicts_l10.hpp"

namespace gl::claims {

namespace {

// Six decimals for seconds, whole numbers for bytes and counts above 1000.
std::string readable(double v) { return v >= 1000 ? fixed(v, 0) : fixed(v, 6); }

Result prof1(const Context& ctx) {
    Result r;
    std::vector<Prof1Row> rows;
    std::ostringstream m;
    for (const BadPipeline p : bad_pipelines()) {
        if (ctx.log) *ctx.log << "  PROF-1: " << pipeline_name(p) << "\n";
        const PipelineRun bad = run_pipeline(p, false);
        const PipelineRun fixed_run = run_pipeline(p, true);
        Prof1Row row{pipeline_name(p), prof::problem_name(planted_problem(p)), prof::problem_name(bad.diagnosis.problem),
                     bad.metric, bad.value, fixed_run.value};
        m << row.pipeline << " (" << bad.config << "): diagnosed " << row.diagnosed << ", remedy \""
          << bad.diagnosis.remedy << "\" (" << fixed_run.config << ") took " << row.metric << " from "
          << readable(row.before) << " to " << readable(row.after) << "; ";
        r.data["pipelines"].push_back({{"pipeline", row.pipeline},
                                       {"planted", row.planted},
                                       {"diagnosed", row.diagnosed},
                                       {"diagnosis", bad.diagnosis.paragraph},
                                       {"remedy", bad.diagnosis.remedy},
                                       {"metric", row.metric},
                                       {"before", row.before},
                                       {"after", row.after},
                                       {"step_seconds_before", bad.step_seconds},
                                       {"step_seconds_after", fixed_run.step_seconds}});
        rows.push_back(std::move(row));
    }
    m << "Each diagnosis is read from the bad pipeline's own profile (time by category on the training thread, "
         "flops per op, host syncs per step, the memory timeline's peak against the cap).";
    r.measured = m.str();
    const Judgement j = judge_prof1(rows);
    r.verdict = j.verdict;
    r.why = j.why;
    return r;
}

}  // namespace

std::vector<Claim> lab10_claims() {
    return {
        {"PROF-1", "10", "a profiler's table and timeline find the bottleneck; each row of the symptom -> remedy "
                         "table is reproduced on a bad pipeline and fixed",
         prof1, /*timed=*/true},
    };
}

}  // namespace gl::claims
