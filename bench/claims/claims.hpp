// The claims report: each lecture claim (../shared/CLAIMS.md) runs an experiment and
// computes its verdict from what it measured in that run. Never typed in.
#pragma once

#include <filesystem>
#include <iomanip>
#include <sstream>
#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "testkit/format.hpp"
#include "testkit/timing.hpp"

namespace gl::claims {

enum class Verdict { Reproduced, NotReproduced, NeedsGpu, NotRun };
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
};

struct Claim {
    std::string id;
    std::string lab;
    std::string lecture_says;
    std::function<Result(const Context&)> run;
};


// The claims of each lab (one function per file), and all of them in order.
std::vector<Claim> lab01_claims();
std::vector<Claim> lab02_claims();
std::vector<Claim> lab03_claims();
std::vector<Claim> lab04_claims();
std::vector<Claim> lab05_claims();
std::vector<Claim> lab07_claims();
std::vector<Claim> lab08_claims();

// Best-of-runs GFLOP/s of an N x N x N SGEMM with a registered kernel on `threads` threads.
double measure_gemm_gflops(const std::string& kernel, std::int64_t n, int threads, double min_seconds);
// The 1-minute load average (how busy the machine was), or -1.
double load_average();
std::vector<Claim> all_claims();

// Runs the selected claims (all when `only` is empty); an experiment that throws gets
// verdict NotRun with the error as its reason.
std::vector<Result> run_claims(const Context& ctx, const std::vector<std::string>& only);

void print_table(const std::vector<Result>& results, std::ostream& out);
std::string to_markdown(const std::vector<Result>& results, const std::string& machine);
nlohmann::json to_json(const std::vector<Result>& results, const std::string& machine);

}  // namespace gl::claims
