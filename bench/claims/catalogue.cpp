// Every claim of the lecture (docs/CLAIMS.md, the course's ../shared/CLAIMS.md), in its
// order, with its lab: the report has a row for each, and a claim without an experiment
// yet is a "not built yet" row, not a missing one. tests/claims/test_verdicts.cpp checks
// this list against CLAIMS.md.
#include <algorithm>
#include <cctype>
#include <sstream>
#include <string_view>

#include "claims.hpp"

namespace gl::claims {

const std::vector<ListedClaim>& lecture_claims() {
    // The claims that have an experiment say what the lecture says in their lab's file
    // (claims_lNN.cpp); the sentence here is for the rows of the ones that do not yet.
    static const std::vector<ListedClaim> all = {
        {"FW-1", "01", ""},
        {"FW-2", "01", ""},
        {"GEMM-1", "02", ""},
        {"CPU-1", "02", ""},
        {"CPU-2", "02", ""},
        {"GPU-1", "03", ""},
        {"GPU-2", "03", ""},
        {"MEM-1", "04", ""},
        {"MEM-2", "04", ""},
        {"MEM-3", "04", ""},
        {"FP-1", "05", ""},
        {"FP-2", "05", ""},
        {"FP-3", "05", ""},
        {"FP-4", "05", ""},
        {"FP-5", "05", ""},
        {"FP-6", "05", ""},
        {"DATA-1", "06", ""},
        {"DATA-2", "06", ""},
        {"DATA-3", "06", ""},
        {"DATA-4", "06", ""},
        {"CKPT-1", "07", ""},
        {"CKPT-2", "07", ""},
        {"CKPT-3", "07", ""},
        {"DP-1", "08", ""},
        {"DP-2", "08", ""},
        {"DP-3", "08", ""},
        {"DP-4", "08", ""},
        {"DP-5", "08", ""},
        {"MP-1", "09", ""},
        {"MP-2", "09", ""},
        {"PROF-1", "10", ""},
        {"CONV-1", "11", ""},
        {"CONV-2", "11", ""},
        {"Q-1", "12", ""},
        {"JIT-1", "13", ""},
        {"DEPLOY-1", "13", ""},
        {"TPU-1", "14", ""},
        {"ENERGY-1", "14", ""},
        {"ASYNC-1", "15", ""},
        {"CHOICE-1", "15", ""},
        {"DEV-1", "15", ""},
    };
    return all;
}

namespace {

// The digits at the start of @p text ("08 Data parallel" -> "08"), or "" when none.
std::string leading_digits(std::string_view text) {
    std::size_t n = 0;
    while (n < text.size() && std::isdigit(static_cast<unsigned char>(text[n]))) ++n;
    return std::string(text.substr(0, n));
}

// The ID of a claim line's "**ID**" ("DP-2"), or "" when it is not a well-formed ID:
// capital letters and digits, a dash, digits.
std::string claim_id(std::string_view text) {
    const std::size_t end = text.find("**");
    if (end == std::string_view::npos) return "";
    const std::string_view id = text.substr(0, end);
    const std::size_t dash = id.rfind('-');
    if (dash == std::string_view::npos || dash == 0 || dash + 1 == id.size()) return "";
    const auto upper_or_digit = [](char c) { return std::isupper(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)); };
    const auto digit = [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; };
    if (!std::all_of(id.begin(), id.begin() + dash, upper_or_digit)) return "";
    if (!std::all_of(id.begin() + dash + 1, id.end(), digit)) return "";
    return std::string(id);
}

}  // namespace

std::vector<ListedClaim> parse_claims_md(const std::string& text) {
    // "## L08 Data parallel training" starts lab 08; "- **DP-2** Ring ..." is a claim.
    // (Plain string tests, not <regex>: GCC 12 warns inside its regex compiler under -O2
    // with sanitizers, and the sanitizer build must stay quiet.)
    std::vector<ListedClaim> claims;
    std::istringstream in(text);
    std::string line, lab;
    while (std::getline(in, line)) {
        const std::string_view view(line);
        if (view.starts_with("## L") && !leading_digits(view.substr(4)).empty()) {
            lab = leading_digits(view.substr(4));
        } else if (view.starts_with("- **")) {
            const std::string id = claim_id(view.substr(4));
            if (!id.empty()) claims.push_back({id, lab, ""});
        }
    }
    return claims;
}

}  // namespace gl::claims
