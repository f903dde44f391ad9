#include "profile_cmd.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>

#include <nlohmann/json.hpp>

#include "../../bench/claims/pipelines_l10.hpp"
#include "base/error.hpp"

namespace gl::cli {

namespace {

void write_text(const std::filesystem::path& path, const std::string& text) {
    std::ofstream out(path);
    check(static_cast<bool>(out), "cannot write " + path.string() + "; check that the folder is writable");
    out << text;
}

std::string memory_csv(const prof::Trace& trace) {
    std::string csv = "rank,ts_us,category,bytes\n";
    for (const prof::MemorySample& m : trace.memory)
        csv += fmt::format("{},{:.3f},{},{}\n", m.pid, m.ts_ns / 1e3, m.category, m.bytes);
    return csv;
}

}  // namespace

prof::Diagnosis write_profile(const prof::Trace& trace, const prof::DiagnosisRules& rules, const std::string& dir,
                              const std::string& trace_name) {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    check(!ec, "cannot create the profile folder " + dir + ": " + ec.message());
    const std::filesystem::path folder(dir);
    prof::write_chrome_trace(trace, (folder / trace_name).string());
    const std::string table = prof::format_op_table(prof::op_table(trace, /*by_shapes=*/true), 1000);
    write_text(folder / "ops.txt", table);
    write_text(folder / "memory.csv", memory_csv(trace));
    const prof::StepSummary summary = prof::summarize(trace);
    const prof::Diagnosis d = prof::diagnose(summary, rules);
    write_text(folder / "diagnosis.txt", fmt::format("{}: {}\nremedy: {}\n", prof::problem_name(d.problem),
                                                     d.paragraph, d.remedy));
    fmt::print("profile of {} steps ({:.3f} ms per step):\n{}", summary.steps,
               summary.steps > 0 ? summary.step_ns / 1e6 / summary.steps : 0.0,
               prof::format_op_table(prof::op_table(trace), 15));
    fmt::print("diagnosis: {}\n  {}\n  remedy: {}\n", prof::problem_name(d.problem), d.paragraph, d.remedy);
    fmt::print("written: {}/{{{}, ops.txt, memory.csv, diagnosis.txt}} (open the trace in ui.perfetto.dev or "
               "chrome://tracing)\n", dir, trace_name);
    return d;
}

TrainProfile::TrainProfile(const std::string& dir, int rank, int steps) : dir_(dir), rank_(rank) {
    if (dir_.empty()) return;
    prof::ProfilerOptions o;
    o.schedule = {.wait = 0, .warmup = 1, .active = steps};
    o.record_shapes = true;
    o.rank = rank;
    profiler_ = std::make_unique<prof::Profiler>(o);
    profiler_->start();
}

void TrainProfile::finish() {
    if (!profiler_) return;
    profiler_->stop();
    const std::string name = rank_ > 0 ? "trace_rank" + std::to_string(rank_) + ".json" : "trace.json";
    if (rank_ == 0) {
        write_profile(profiler_->trace(), {}, dir_, name);
    } else {
        std::filesystem::create_directories(dir_);
        prof::write_chrome_trace(profiler_->trace(), (std::filesystem::path(dir_) / name).string());
    }
    profiler_.reset();
}

int cmd_profile(const ProfileArgs& a) {
    const claims::BadPipeline p = claims::parse_pipeline(a.pipeline);
    const claims::PipelineRun run = claims::run_pipeline(p, a.remedy);
    fmt::print("pipeline: {} ({}){}\n", a.pipeline, run.config, a.remedy ? ", with the lecture's remedy" : "");
    write_profile(run.trace, run.rules, a.out);
    fmt::print("{}: {:.6g}\n", run.metric, run.value);
    return 0;
}

int cmd_profile_merge(const std::vector<std::string>& inputs, const std::string& out) {
    using nlohmann::json;
    check(!inputs.empty(), "profile merge: give the traces to merge (one per rank)");
    std::vector<json> traces;
    std::int64_t earliest = std::numeric_limits<std::int64_t>::max();
    for (const std::string& path : inputs) {
        std::ifstream in(path);
        check(static_cast<bool>(in), "profile merge: cannot read " + path);
        json j = json::parse(in, nullptr, false);
        check(!j.is_discarded() && j.contains("traceEvents"),
              "profile merge: " + path + " is not a trace written by gradlab (no traceEvents)");
        earliest = std::min(earliest, j.value("/otherData/clock_origin_ns"_json_pointer, std::int64_t{0}));
        traces.push_back(std::move(j));
    }
    // Each file's pid is its rank; files whose pids repeat (single-process runs) get their
    // position instead, so every input keeps a track of its own.
    std::set<int> seen;
    json merged = {{"displayTimeUnit", "ms"}, {"traceEvents", json::array()}};
    for (std::size_t i = 0; i < traces.size(); ++i) {
        std::set<int> pids;
        for (const json& e : traces[i]["traceEvents"])
            if (e.contains("pid")) pids.insert(e["pid"].get<int>());
        const bool clash = std::any_of(pids.begin(), pids.end(), [&](int p) { return seen.count(p) > 0; });
        const double shift_us =
            (traces[i].value("/otherData/clock_origin_ns"_json_pointer, std::int64_t{0}) - earliest) / 1e3;
        for (json e : traces[i]["traceEvents"]) {
            if (clash && e.contains("pid")) e["pid"] = static_cast<int>(i);
            if (e.contains("ts")) e["ts"] = e["ts"].get<double>() + shift_us;
            if (e.value("ph", "") == "M" && e.value("name", "") == "process_name")
                e["args"]["name"] = "rank " + std::to_string(e["pid"].get<int>());
            if (e.value("cat", "") == "flow") e["id"] = e["id"].get<std::uint64_t>() * 64 + i;  // ids stay per file
            merged["traceEvents"].push_back(std::move(e));
        }
        for (const int p : pids) seen.insert(clash ? static_cast<int>(i) : p);
    }
    std::ofstream o(out);
    check(static_cast<bool>(o), "profile merge: cannot write " + out);
    o << merged.dump() << "\n";
    fmt::print("merged {} traces into {} ({} tracks)\n", inputs.size(), out, seen.size());
    return 0;
}

}  // namespace gl::cli
