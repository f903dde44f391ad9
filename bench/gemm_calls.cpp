// gemm_calls: GEMM kernels timed call by call, in alternating blocks, with the whole
// distribution of call times (fastest, quartiles, 90th percentile, mean) and each kernel's
// time over the first one's (above 1: the first kernel is faster).
//
//   build/bench/gemm_calls --n 1024 2048 --kernels balanced onednn --rounds 24
//   build/bench/gemm_calls --n 2048 --kernels balanced threaded onednn --json calls.json
//
// Google Benchmark (bench_gemm) reports the mean of each repetition, which mixes the rare
// slow call (the host took a CPU away for milliseconds) into the typical one. Here every
// call is kept: on a shared machine two kernels can be level at the fastest call and far
// apart at the 90th percentile, and which one "wins" depends on the statistic.
//
// Each round runs every kernel for a block of calls, in an order rotated from round to
// round. Each block starts with untimed calls for 30 ms (bench/warm_up.hpp): a peer
// library's idle threads keep spinning for a while after its last call, and those calls
// absorb it.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "base/error.hpp"
#include "kernels/gemm.hpp"
#include "parallel/thread_pool.hpp"
#include "testkit/aligned.hpp"
#include "testkit/random.hpp"
#include "cpu_gemm_kernels.hpp"
#include "warm_up.hpp"

namespace {

using Clock = std::chrono::steady_clock;

// Call times of one kernel, in milliseconds, and what is read off them.
struct Calls {
    std::string kernel;
    std::vector<double> ms;

    // The time at rank round(q x (count - 1)) of the sorted times: the fastest for q = 0, for
    // q = 0.5 of an even count the upper of the two middle ones.
    double quantile(double q) const {
        std::vector<double> v = ms;
        std::sort(v.begin(), v.end());
        const auto rank = static_cast<std::size_t>(q * static_cast<double>(v.size() - 1) + 0.5);
        return v[std::min(rank, v.size() - 1)];
    }
    double mean() const {
        double sum = 0.0;
        for (double t : ms) sum += t;
        return sum / static_cast<double>(ms.size());
    }
};

struct Options {
    std::vector<std::int64_t> sizes{2048};
    std::vector<std::string> kernels{"balanced", "onednn"};
    int threads = 2, rounds = 12, block = 6;
    std::string json_path;
};

// Every kernel on N x N x N, @p o.rounds blocks of @p o.block timed calls each.
std::vector<Calls> time_calls(std::int64_t n, const Options& o) {
    const auto count = static_cast<std::size_t>(n * n);
    const auto A = gl::testkit::aligned(gl::testkit::random_floats(count, 1));
    const auto B = gl::testkit::aligned(gl::testkit::random_floats(count, 2));
    gl::testkit::AlignedVector<float> C(count);
    const auto g = gl::kernels::dense_gemm_args(false, false, n, n, n, A.data(), B.data(), C.data());
    std::vector<Calls> calls;
    for (const auto& name : o.kernels) calls.push_back({name, {}});
    const std::size_t k = calls.size();
    for (int round = 0; round < o.rounds; ++round)
        for (std::size_t step = 0; step < k; ++step) {
            Calls& c = calls[(step + static_cast<std::size_t>(round)) % k];  // rotate the order
            const auto& kernel = gl::kernels::find_gemm(c.kernel);
            gl::bench::warm_up([&] { kernel.sgemm(g); });  // absorbs what the previous kernel left running
            for (int i = 0; i < o.block; ++i) {
                const auto start = Clock::now();
                kernel.sgemm(g);
                c.ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
            }
        }
    return calls;
}

void print(std::int64_t n, const std::vector<Calls>& calls) {
    std::printf("N = %lld, %zu calls per kernel, milliseconds\n", static_cast<long long>(n), calls[0].ms.size());
    std::printf("%-12s %9s %9s %9s %9s %9s %9s | %s\n", "kernel", "fastest", "p25", "median", "p75", "p90", "mean",
                "this one's time / the first kernel's: fastest, p25, median, mean");
    const Calls& first = calls[0];
    for (const Calls& c : calls)
        std::printf("%-12s %9.3f %9.3f %9.3f %9.3f %9.3f %9.3f | %.3f %.3f %.3f %.3f\n", c.kernel.c_str(),
                    c.quantile(0), c.quantile(0.25), c.quantile(0.5), c.quantile(0.75), c.quantile(0.9), c.mean(),
                    c.quantile(0) / first.quantile(0), c.quantile(0.25) / first.quantile(0.25),
                    c.quantile(0.5) / first.quantile(0.5), c.mean() / first.mean());
}

nlohmann::json to_json(std::int64_t n, const std::vector<Calls>& calls) {
    nlohmann::json j = {{"n", n}, {"kernels", nlohmann::json::array()}};
    for (const Calls& c : calls)
        j["kernels"].push_back({{"kernel", c.kernel},
                                {"ms", c.ms},
                                {"fastest_ms", c.quantile(0)},
                                {"p25_ms", c.quantile(0.25)},
                                {"median_ms", c.quantile(0.5)},
                                {"p75_ms", c.quantile(0.75)},
                                {"p90_ms", c.quantile(0.9)},
                                {"mean_ms", c.mean()}});
    return j;
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"gemm_calls: square GEMMs timed call by call, kernels alternating in blocks"};
    Options o;
    app.add_option("--n", o.sizes, "matrix sizes N (N x N x N)")->check(CLI::Range(1, 8192));
    app.add_option("--kernels", o.kernels, "kernels to time (bench_gemm's names); ratios are to the first")
        ->expected(1, -1);
    app.add_option("--threads", o.threads, "threads")->check(CLI::Range(1, 256));
    app.add_option("--rounds", o.rounds, "rounds (each runs every kernel once, as a block)")->check(CLI::Range(1, 10000));
    app.add_option("--block", o.block, "timed calls per block")->check(CLI::Range(1, 1000));
    app.add_option("--json", o.json_path, "also write every call time to this JSON file");
    CLI11_PARSE(app, argc, argv);
    try {
        gl::bench::check_cpu_gemm_kernels("gemm_calls", o.kernels);
        gl::set_num_threads(o.threads);
        nlohmann::json out = {{"threads", o.threads}, {"rounds", o.rounds}, {"block", o.block},
                              {"sizes", nlohmann::json::array()}};
        for (std::int64_t n : o.sizes) {
            const auto calls = time_calls(n, o);
            print(n, calls);
            out["sizes"].push_back(to_json(n, calls));
        }
        if (!o.json_path.empty()) {
            std::ofstream f(o.json_path);
            if (!(f << out.dump(1) << '\n')) throw gl::Error("gemm_calls: cannot write " + o.json_path);
        }
    } catch (const std::exception& e) {
        std::fprintf(stderr, "%s\n", e.what());
        return 1;
    }
    return 0;
}
