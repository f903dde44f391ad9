// The claims report: each lecture claim (../shared/CLAIMS.md) runs an experiment and
// computes its verdict from what it measured in that run. Never typed in.
#pragma once

#include <filesystem>
#include <iomanip>
#include <sstream>
#include <functional>
#include <optional>
#include <iosfwd>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "testkit/format.hpp"
#include "testkit/timing.hpp"

namespace gl::claims {

/// NotRun: the experiment failed; Suspect: a reading above a physical ceiling (see
/// verdicts.hpp); NotBuilt: the claim is in CLAIMS.md but has no experiment yet.
enum class Verdict { Reproduced, NotReproduced, NeedsGpu, NotRun, Suspect, NotBuilt };
std::string to_string(Verdict v);
// Numbers for the "measured" texts and the middle of a sample: the testkit's.
using testkit::fixed;
using testkit::median;

struct Context {
    bool quick = false;            // keep the whole report within a few minutes on 2 cores
    std::string data_dir;          // MNIST-format folder (Fashion-MNIST by default)
    std::uint64_t seed = 0;
    std::ostream* log = nullptr;   // progress messages
};

struct Result {
    std::string id;                // "FW-1"
    std::string lab;               // "01"
    std::string lecture_says;
    std::string measured;          // one paragraph: the numbers measured here
    Verdict verdict = Verdict::NotRun;
    std::string why;               // how the verdict follows from the numbers
    nlohmann::json data;           // every number, for the JSON report
    double seconds = 0.0;          // time the experiment took
    // Timed claims only: the 1-minute load average before and after the experiment, whether
    // it was measured a second time because the first ran under load, and whether the
    // verdict kept was still taken under load (load above the cores).
    std::optional<double> load_before, load_after;
    bool remeasured = false;
    bool under_load = false;
};

struct Claim {
    std::string id;
    std::string lab;
    std::string lecture_says;
    std::function<Result(const Context&)> run;
    bool timed = false;            // the verdict depends on times (so on the machine's load)
};

/// A claim of CLAIMS.md: its ID, its lab, and (for one without an experiment yet) what the
/// lecture says.
struct ListedClaim {
    std::string id;
    std::string lab;
    std::string says;
};
/// Every claim of CLAIMS.md in its order (the report has one row for each).
const std::vector<ListedClaim>& lecture_claims();
/// The claims listed in the text of CLAIMS.md ("## LNN" headings, "- **ID**" items), with
/// an empty `says`: what the test compares lecture_claims() with.
std::vector<ListedClaim> parse_claims_md(const std::string& text);

/// Where and from what a report was made, for claims.json and claims.md.
struct RunInfo {
    std::string machine;
    std::string commit;            // git describe of the source tree at build time
    std::string date;              // UTC, ISO 8601
    std::string build_type;        // meson buildtype and options that change speed
    bool quick = false;
};


// The claims of each lab (one function per file), and all of them in order.
std::vector<Claim> lab01_claims();
std::vector<Claim> lab02_claims();
std::vector<Claim> lab03_claims();
std::vector<Claim> lab04_claims();
std::vector<Claim> lab05_claims();
std::vector<Claim> lab06_claims();
std::vector<Claim> lab07_claims();
std::vector<Claim> lab08_claims();
std::vector<Claim> lab09_claims();
std::vector<Claim> lab10_claims();
std::vector<Claim> lab11_claims();
std::vector<Claim> lab12_claims();
std::vector<Claim> lab13_claims();
std::vector<Claim> lab14_claims();
std::vector<Claim> lab15_device_claims();   // DEV-1 (claims_l15_dev.cpp)
std::vector<Claim> lab15_streams_claims();  // ASYNC-1, DATA-3, ... (claims_l15_streams.cpp)
std::vector<Claim> lab15_choice_claims();   // CHOICE-1 (claims_l15_choice.cpp)

// Best-of-runs GFLOP/s of an N x N x N SGEMM with a registered kernel on `threads` threads.
double measure_gemm_gflops(const std::string& kernel, std::int64_t n, int threads, double min_seconds);
// Whether the FP32 GEMM called `kernel` competes for "the fastest on this CPU" at large
// sizes: ours for large problems (version 5 "threaded", version 8 "balanced") and the peer
// libraries. The claims that compare with the best FP32 GEMM (GPU-1, Q-1) measure these.
bool large_fp32_gemm_contender(const std::string& kernel);
// The 1-minute load average (how busy the machine was), or -1.
double load_average();
// The CPUs this process may run on: what "every core" means for CPU-1, CPU-2, MEM-1, MEM-3.
int machine_cores();
std::vector<Claim> all_claims();

// Runs the selected claims (all when `only` is empty), in CLAIMS.md's order, a row for
// each: a claim without an experiment gets verdict NotBuilt; an experiment that throws
// gets NotRun with the error as its reason; a timed claim whose run saw a load above the
// cores is measured once more and the second run kept (marked if still under load).
std::vector<Result> run_claims(const Context& ctx, const std::vector<std::string>& only);

/// "41 claims: 19 reproduced, 3 not reproduced, 1 measurement suspect, 2 need a GPU,
/// 16 not built yet, 0 not run" (every verdict counted, zeros included).
std::string summary_line(const std::vector<Result>& results);
void print_table(const std::vector<Result>& results, std::ostream& out);
std::string to_markdown(const std::vector<Result>& results, const RunInfo& info);
nlohmann::json to_json(const std::vector<Result>& results, const RunInfo& info);

}  // namespace gl::claims
