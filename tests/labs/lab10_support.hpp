// Lab 10's fixtures: reading a recorded Chrome trace back into a prof::Trace, the recorded
// traces' folder, and synthetic nested traces whose self times are known by construction.
#pragma once

#include <cmath>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/rng.hpp"
#include "profiler/profiler.hpp"

namespace gl::lab10 {

/// The folder of the recorded traces (gradlab profile --pipeline NAME, committed).
inline std::string fixture(const std::string& name) { return std::string(LAB10_FIXTURES) + "/" + name + ".json"; }

/// The category called @p name (category_name's inverse); User for anything else.
inline prof::Category category_of(const std::string& name) {
    for (std::size_t c = 0; c < prof::kCategoryCount; ++c)
        if (name == prof::category_name(static_cast<prof::Category>(c))) return static_cast<prof::Category>(c);
    return prof::Category::User;
}

inline std::int64_t to_ns(double us) { return std::llround(us * 1000.0); }

/// The trace in the file at @p path (complete events, memory counters), as recorded.
inline prof::Trace read_trace(const std::string& path) {
    std::ifstream in(path);
    if (!in) throw std::runtime_error("cannot read the fixture " + path);
    const nlohmann::json j = nlohmann::json::parse(in);
    prof::Trace t;
    for (const auto& e : j.at("traceEvents")) {
        const std::string ph = e.at("ph");
        if (ph == "X") {
            prof::Event ev;
            ev.name = e.at("name");
            ev.category = category_of(e.at("cat"));
            ev.pid = e.at("pid");
            ev.tid = e.at("tid");
            ev.start_ns = to_ns(e.at("ts"));
            ev.end_ns = ev.start_ns + to_ns(e.at("dur"));
            const auto& args = e.at("args");
            ev.flops = args.value("flops", 0.0);
            ev.bytes = args.value("bytes", 0.0);
            ev.shapes = args.value("shapes", std::string());
            if (ev.category == prof::Category::Step) ++t.steps;
            t.events.push_back(std::move(ev));
        } else if (ph == "C") {
            std::string name = e.at("name");
            t.memory.push_back({name.substr(std::string("memory: ").size()), e.at("pid"), to_ns(e.at("ts")),
                                e.at("args").at("bytes").get<std::int64_t>()});
        }
    }
    return t;
}

/// A synthetic trace and each event's self time, known from how it was built.
struct KnownTrace {
    std::vector<prof::Event> events;
    std::vector<std::int64_t> self;
};

// Adds a tree of scopes inside [start, end) on (pid, tid): each scope gets a few children
// in disjoint sub-intervals, with gaps, so the nesting is exactly the tree's.
inline void add_tree(KnownTrace& k, Rng& rng, int pid, int tid, std::int64_t start, std::int64_t end, int depth) {
    const std::size_t me = k.events.size();
    prof::Event e;
    e.name = "scope" + std::to_string(rng.next_u64() % 5);
    e.category = static_cast<prof::Category>(1 + rng.next_u64() % (prof::kCategoryCount - 1));
    e.pid = pid;
    e.tid = tid;
    e.start_ns = start;
    e.end_ns = end;
    k.events.push_back(e);
    k.self.push_back(end - start);
    if (depth == 0 || end - start < 8) return;
    const int children = static_cast<int>(rng.next_u64() % 4);
    const std::int64_t slot = (end - start) / (children + 1);
    for (int c = 0; c < children; ++c) {
        // Child c lives in [start + c*slot, start + (c+1)*slot), shrunk by a random margin;
        // the first child may start exactly where the parent does.
        const std::int64_t lo = start + c * slot + (c == 0 && rng.next_u64() % 2 ? 0 : 1 + static_cast<std::int64_t>(rng.next_u64() % 3));
        const std::int64_t hi = start + (c + 1) * slot - 1;
        if (hi <= lo) continue;
        k.self[me] -= hi - lo;
        add_tree(k, rng, pid, tid, lo, hi, depth - 1);
    }
}

/// Trees on several threads and two ranks, overlapping in time, in shuffled order.
inline KnownTrace random_trace(std::uint64_t seed) {
    Rng rng(seed);
    KnownTrace k;
    for (int pid = 0; pid < 2; ++pid)
        for (int tid = 0; tid < 3; ++tid) {
            std::int64_t t = static_cast<std::int64_t>(rng.next_u64() % 50);
            for (int root = 0; root < 3; ++root) {
                const std::int64_t len = 200 + static_cast<std::int64_t>(rng.next_u64() % 5000);
                add_tree(k, rng, pid, tid, t, t + len, 4);
                t += len + static_cast<std::int64_t>(rng.next_u64() % 3);  // 0: the next root starts as this ends
            }
        }
    for (std::size_t i = k.events.size(); i > 1; --i) {  // shuffle, keeping self[] aligned
        const std::size_t j = rng.next_u64() % i;
        std::swap(k.events[i - 1], k.events[j]);
        std::swap(k.self[i - 1], k.self[j]);
    }
    return k;
}

}  // namespace gl::lab10
