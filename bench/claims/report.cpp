#include <algorithm>
#include <chrono>
#include <iomanip>
#include <ostream>
#include <sstream>

#include "claims.hpp"
#include "base/error.hpp"

namespace gl::claims {

std::string to_string(Verdict v) {
    switch (v) {
        case Verdict::Reproduced: return "reproduced";
        case Verdict::NotReproduced: return "not reproduced";
        case Verdict::NeedsGpu: return "needs a GPU";
        case Verdict::NotRun: return "not run";
    }
    return "?";
}

std::vector<Claim> all_claims() {
    std::vector<Claim> all;
    for (auto&& group : {lab01_claims(), lab02_claims(), lab03_claims(), lab04_claims(), lab05_claims(),
                          lab07_claims(), lab08_claims()})
        for (auto& c : group) all.push_back(c);
    return all;
}

std::vector<Result> run_claims(const Context& ctx, const std::vector<std::string>& only) {
    const std::vector<Claim> claims = all_claims();
    for (const auto& id : only) {
        bool known = false;
        for (const auto& c : claims) known = known || c.id == id;
        std::string ids;
        for (const auto& c : claims) ids += (ids.empty() ? "" : ", ") + c.id;
        check(known, "unknown claim '" + id + "'; the report has: " + ids);
    }
    std::vector<Result> results;
    for (const auto& claim : claims) {
        if (!only.empty() && std::find(only.begin(), only.end(), claim.id) == only.end()) continue;
        if (ctx.log) *ctx.log << "== " << claim.id << ": " << claim.lecture_says << "\n" << std::flush;
        const auto start = std::chrono::steady_clock::now();
        Result r;
        try {
            r = claim.run(ctx);
        } catch (const std::exception& e) {
            r.verdict = Verdict::NotRun;
            r.why = std::string("the experiment failed: ") + e.what();
        }
        r.id = claim.id;
        r.lab = claim.lab;
        r.lecture_says = claim.lecture_says;
        r.seconds = testkit::seconds_since(start);
        results.push_back(r);
    }
    return results;
}

void print_table(const std::vector<Result>& results, std::ostream& out) {
    for (const auto& r : results) {
        out << "\n" << r.id << " (lab " << r.lab << ")  [" << to_string(r.verdict) << "]\n"
            << "  lecture:  " << r.lecture_says << "\n"
            << "  measured: " << r.measured << "\n"
            << "  verdict:  " << r.why << "\n";
    }
    int reproduced = 0;
    for (const auto& r : results) reproduced += r.verdict == Verdict::Reproduced;
    out << "\n" << reproduced << " of " << results.size() << " claims reproduced in this run.\n";
}

std::string to_markdown(const std::vector<Result>& results, const std::string& machine) {
    std::ostringstream md;
    md << "# Claims report\n\nMachine: " << machine << "\n\n"
       << "| claim | lab | the lecture says | measured here | verdict |\n|---|---|---|---|---|\n";
    for (const auto& r : results)
        md << "| " << r.id << " | " << r.lab << " | " << r.lecture_says << " | " << r.measured << " | **"
           << to_string(r.verdict) << "**: " << r.why << " |\n";
    return md.str();
}

nlohmann::json to_json(const std::vector<Result>& results, const std::string& machine) {
    nlohmann::json j;
    j["machine"] = machine;
    j["claims"] = nlohmann::json::array();
    for (const auto& r : results)
        j["claims"].push_back({{"id", r.id},
                               {"lab", r.lab},
                               {"lecture_says", r.lecture_says},
                               {"measured", r.measured},
                               {"verdict", to_string(r.verdict)},
                               {"why", r.why},
                               {"seconds", r.seconds},
                               {"data", r.data}});
    return j;
}

}  // namespace gl::claims
