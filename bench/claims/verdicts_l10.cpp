#include "verdicts_l10.hpp"

#include <sstream>

#include "testkit/format.hpp"

namespace gl::claims {

Judgement judge_prof1(const std::vector<Prof1Row>& rows) {
    if (rows.empty()) return {Verdict::NotRun, "no pipeline was measured"};
    std::ostringstream failures;
    for (const Prof1Row& r : rows) {
        if (r.diagnosed != r.planted)
            failures << r.pipeline << ": the diagnosis named " << r.diagnosed << ", the planted problem is " << r.planted
                     << "; ";
        if (!(r.after <= (1.0 - kProf1MinGain) * r.before))
            failures << r.pipeline << ": the remedy took " << r.metric << " from " << testkit::fixed(r.before, 6) << " to "
                     << testkit::fixed(r.after, 6) << ", not " << static_cast<int>(kProf1MinGain * 100) << "% lower; ";
    }
    const std::string f = failures.str();
    if (!f.empty()) return {Verdict::NotReproduced, f.substr(0, f.size() - 2)};
    return {Verdict::Reproduced, "each of the " + std::to_string(rows.size()) +
                                     " diagnoses names the planted problem, and each remedy lowers its metric by at least " +
                                     std::to_string(static_cast<int>(kProf1MinGain * 100)) + "%"};
}

}  // namespace gl::claims
