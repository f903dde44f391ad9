// systolic_trace: run a small GEMM on the cycle-level systolic array and print the state of
// every cell at every cycle, as text (for reading) or JSON (for tools/plot_wavefront.py).
//
//   build/tools/systolic_trace --rows 3 --cols 3 -M 4 -N 3 -K 3
//   build/tools/systolic_trace --dataflow os --format json > trace.json
#include <cstdio>
#include <iostream>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "base/rng.hpp"
#include "systolic/systolic.hpp"

namespace {

using namespace gl::systolic;

// Small integers are easier to follow in a trace than the whole int8 range.
Matrix<std::int8_t> small_values(std::int64_t rows, std::int64_t cols, std::uint64_t seed) {
    Matrix<std::int8_t> m(rows, cols);
    gl::Rng rng(seed);
    for (auto& v : m.data) v = static_cast<std::int8_t>(static_cast<int>(rng.below(7)) - 3);
    return m;
}

nlohmann::json to_json(const Trace& trace, const Counts& counts, std::int64_t M, std::int64_t N, std::int64_t K) {
    nlohmann::json frames = nlohmann::json::array();
    for (const TraceFrame& f : trace.frames) {
        nlohmann::json cells = nlohmann::json::array();
        for (const CellView& c : f.cells)
            cells.push_back({{"mac", c.mac}, {"has_a", c.has_a}, {"a", c.a}, {"has_b", c.has_b}, {"b", c.b}, {"sum", c.sum}});
        frames.push_back({{"cycle", f.cycle}, {"pass", f.pass}, {"phase", f.phase}, {"cells", cells}});
    }
    return {{"rows", trace.array.rows}, {"cols", trace.array.cols}, {"dataflow", to_string(trace.flow)},
            {"M", M}, {"N", N}, {"K", K}, {"cycles", counts.cycles}, {"macs", counts.macs}, {"frames", frames}};
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"systolic_trace: every cell of a small systolic array, cycle by cycle"};
    std::int64_t rows = 3, cols = 3, M = 4, N = 3, K = 3;
    std::uint64_t seed = 0;
    std::string flow = "ws", format = "text";
    app.add_option("--rows", rows, "cells per column (R)")->check(CLI::Range(1, 64));
    app.add_option("--cols", cols, "cells per row (C)")->check(CLI::Range(1, 64));
    app.add_option("-M", M, "rows of A and C")->check(CLI::Range(1, 4096));
    app.add_option("-N", N, "columns of B and C")->check(CLI::Range(1, 4096));
    app.add_option("-K", K, "columns of A, rows of B")->check(CLI::Range(1, 4096));
    app.add_option("--dataflow", flow, "ws (weight-stationary) or os (output-stationary)")
        ->check(CLI::IsMember({"ws", "os"}));
    app.add_option("--format", format, "text or json")->check(CLI::IsMember({"text", "json"}));
    app.add_option("--seed", seed, "seed of the operands (small integers in -3..3)");
    CLI11_PARSE(app, argc, argv);
    try {
        const auto A = small_values(M, K, seed), B = small_values(K, N, seed + 1);
        Trace trace;
        const auto run = systolic_gemm(A, B, {rows, cols},
                                       flow == "ws" ? Dataflow::WeightStationary : Dataflow::OutputStationary, &trace);
        if (format == "json") std::cout << to_json(trace, run.counts, M, N, K).dump() << '\n';
        else std::cout << format_trace(trace) << run.counts.cycles << " cycles, " << run.counts.macs << " multiply-adds\n";
    } catch (const std::exception& e) {
        std::fprintf(stderr, "systolic_trace: error: %s\n", e.what());
        return 1;
    }
    return 0;
}
