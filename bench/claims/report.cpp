#include <algorithm>
#include <chrono>
#include <iomanip>
#include <ostream>
#include <sstream>

#include "claims.hpp"
#include "base/error.hpp"
#include "sys/cpu_info.hpp"
#include "verdicts.hpp"

namespace gl::claims {

std::string to_string(Verdict v) {
    switch (v) {
        case Verdict::Reproduced: return "reproduced";
        case Verdict::NotReproduced: return "not reproduced";
        case Verdict::NeedsGpu: return "needs a GPU";
        case Verdict::NotRun: return "not run";
        case Verdict::Suspect: return "measurement suspect";
        case Verdict::NotBuilt: return "not built yet";
    }
    return "?";
}

std::vector<Claim> all_claims() {
    std::vector<Claim> all;
    for (auto&& group : {lab01_claims(), lab02_claims(), lab03_claims(), lab04_claims(), lab05_claims(),
                          lab06_claims(), lab07_claims(), lab08_claims(), lab09_claims(), lab10_claims(),
                          lab11_claims(), lab12_claims(), lab13_claims(), lab14_claims(),
                          lab15_device_claims(), lab15_streams_claims(), lab15_choice_claims()})
        for (auto& c : group) all.push_back(c);
    return all;
}

int machine_cores() { return std::max(1, sys::cpu_info().logical_cpus); }

namespace {

// One run of an experiment, timed; a throw becomes a NotRun row that says why.
Result run_once(const Claim& claim, const Context& ctx) {
    const auto start = std::chrono::steady_clock::now();
    Result r;
    try {
        r = claim.run(ctx);
    } catch (const std::exception& e) {
        r.verdict = Verdict::NotRun;
        r.why = std::string("the experiment failed: ") + e.what();
    }
    r.seconds = testkit::seconds_since(start);
    return r;
}

// A timed claim, with the load around it; measured once more when the first run was
// taken under load (the second is kept, and the first run's loads are kept in its data).
Result run_timed(const Claim& claim, const Context& ctx) {
    const int cores = machine_cores();
    const double before = load_average();
    Result r = run_once(claim, ctx);
    const double after = load_average();
    if (under_load(before, after, cores)) {
        if (ctx.log)
            *ctx.log << "   load average " << fixed(std::max(before, after), 1) << " > " << cores
                     << " cores: measuring once more\n" << std::flush;
        const double again_before = load_average();
        Result again = run_once(claim, ctx);
        again.data["first_run"] = {{"verdict", to_string(r.verdict)}, {"why", r.why}, {"seconds", r.seconds},
                                   {"load_before", before}, {"load_after", after}};
        again.load_before = again_before;
        again.load_after = load_average();
        again.remeasured = true;
        r = again;
    } else {
        r.load_before = before;
        r.load_after = after;
    }
    r.under_load = under_load(*r.load_before, *r.load_after, cores);
    return r;
}

Result not_built(const ListedClaim& listed) {
    Result r;
    r.lecture_says = listed.says;
    r.verdict = Verdict::NotBuilt;
    r.measured = "nothing: no experiment for this claim yet";
    r.why = "the claim is in CLAIMS.md; its lab and experiment are not built yet";
    return r;
}

}  // namespace

std::vector<Result> run_claims(const Context& ctx, const std::vector<std::string>& only) {
    const std::vector<Claim> built = all_claims();
    const auto& listed = lecture_claims();
    for (const auto& id : only) {
        bool known = false;
        for (const auto& c : listed) known = known || c.id == id;
        std::string ids;
        for (const auto& c : listed) ids += (ids.empty() ? "" : ", ") + c.id;
        check(known, "unknown claim '" + id + "'; the report has: " + ids);
    }
    std::vector<Result> results;
    for (const auto& entry : listed) {
        if (!only.empty() && std::find(only.begin(), only.end(), entry.id) == only.end()) continue;
        const auto claim = std::find_if(built.begin(), built.end(), [&](const Claim& c) { return c.id == entry.id; });
        Result r;
        if (claim == built.end()) {
            r = not_built(entry);
        } else {
            if (ctx.log) *ctx.log << "== " << claim->id << ": " << claim->lecture_says << "\n" << std::flush;
            r = claim->timed ? run_timed(*claim, ctx) : run_once(*claim, ctx);
            r.lecture_says = claim->lecture_says;
        }
        r.id = entry.id;
        r.lab = entry.lab;
        results.push_back(r);
    }
    return results;
}

std::string summary_line(const std::vector<Result>& results) {
    const Verdict order[] = {Verdict::Reproduced, Verdict::NotReproduced, Verdict::Suspect,
                             Verdict::NeedsGpu,   Verdict::NotBuilt,      Verdict::NotRun};
    std::string line = std::to_string(results.size()) + " claims:";
    for (std::size_t i = 0; i < std::size(order); ++i) {
        const auto n = std::count_if(results.begin(), results.end(), [&](const Result& r) { return r.verdict == order[i]; });
        line += (i == 0 ? " " : ", ") + std::to_string(n) + " " + to_string(order[i]);
    }
    const auto loaded = std::count_if(results.begin(), results.end(), [](const Result& r) { return r.under_load; });
    if (loaded > 0) line += "; " + std::to_string(loaded) + " timed under load";
    return line;
}

namespace {

// "reproduced", or "reproduced, under load 3.2 > 2 cores, in both runs" for a verdict
// taken under load (after the one re-measurement).
std::string verdict_label(const Result& r) {
    std::string label = to_string(r.verdict);
    if (r.under_load)
        label += ", under load " + fixed(std::max(*r.load_before, *r.load_after), 1) + " > " +
                 std::to_string(machine_cores()) + " cores" + (r.remeasured ? ", in both runs" : "");
    return label;
}

}  // namespace

void print_table(const std::vector<Result>& results, std::ostream& out) {
    for (const auto& r : results) {
        out << "\n" << r.id << " (lab " << r.lab << ")  [" << verdict_label(r) << "]\n"
            << "  lecture:  " << r.lecture_says << "\n"
            << "  measured: " << r.measured << "\n"
            << "  verdict:  " << r.why << "\n";
    }
    out << "\n" << summary_line(results) << ".\n";
}

std::string to_markdown(const std::vector<Result>& results, const RunInfo& info) {
    std::ostringstream md;
    md << "# Claims report\n\nMachine: " << info.machine << "  \nCommit: " << info.commit << " (" << info.build_type
       << " build)  \nDate: " << info.date << (info.quick ? " (quick run)" : "") << "\n\n"
       << summary_line(results) << ".\n\n"
       << "| claim | lab | the lecture says | measured here | verdict |\n|---|---|---|---|---|\n";
    for (const auto& r : results)
        md << "| " << r.id << " | " << r.lab << " | " << r.lecture_says << " | " << r.measured << " | **"
           << verdict_label(r) << "**: " << r.why << " |\n";
    return md.str();
}

nlohmann::json to_json(const std::vector<Result>& results, const RunInfo& info) {
    nlohmann::json j;
    j["machine"] = info.machine;
    j["commit"] = info.commit;
    j["date"] = info.date;
    j["build_type"] = info.build_type;
    j["quick"] = info.quick;
    j["cores"] = machine_cores();
    j["summary"] = summary_line(results);
    j["claims"] = nlohmann::json::array();
    for (const auto& r : results) {
        nlohmann::json load = nullptr;
        if (r.load_before)
            load = {{"before", *r.load_before}, {"after", *r.load_after}, {"remeasured", r.remeasured},
                    {"under_load", r.under_load}};
        j["claims"].push_back({{"id", r.id},
                               {"lab", r.lab},
                               {"lecture_says", r.lecture_says},
                               {"measured", r.measured},
                               {"verdict", to_string(r.verdict)},
                               {"why", r.why},
                               {"seconds", r.seconds},
                               {"load_average", load},
                               {"data", r.data}});
    }
    return j;
}

}  // namespace gl::claims
