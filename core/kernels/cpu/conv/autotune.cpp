// The autotuner: time each algorithm once per problem, keep the fastest.
#include "kernels/cpu/conv/autotune.hpp"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <algorithm>
#include <map>
#include <mutex>

#include "base/error.hpp"

namespace gl::kernels::conv {
namespace {

struct State {
    std::mutex mutex;
    std::string setting = "auto";
    std::map<std::string, TuneRecord> cache;  // by key()
    std::vector<std::string> order;           // keys in the order they were decided
};

// A run this long is timed once: a warm-up changes little and it will not be picked anyway.
constexpr double kSlowRun = 0.2;
// Problems are timed on at most this many images of the batch: every algorithm's time
// grows linearly with the images, so the order does not change, and tuning stays cheap.
constexpr std::int64_t kTuneImages = 16;

// A warm-up run this many times the fastest timed so far is not repeated (see above).
constexpr double kHopeless = 4.0;

// The algorithms in the order they are timed: im2col first (it runs every problem and is
// rarely far from the best), so the slow ones meet a bar on their first run.
std::vector<ConvAlgorithm> tuning_order() {
    std::vector<ConvAlgorithm> order = conv_algorithms();
    std::stable_partition(order.begin(), order.end(), [](const ConvAlgorithm& a) { return a.algo == ConvAlgo::Im2col; });
    return order;
}

// Puts the measured (name, seconds) pairs back in the registry's order, as the table shows them.
void in_registry_order(std::vector<std::pair<std::string, double>>& seconds) {
    std::vector<std::pair<std::string, double>> ordered;
    for (const ConvAlgorithm& a : conv_algorithms())
        for (const auto& entry : seconds)
            if (entry.first == a.name) ordered.push_back(entry);
    seconds = std::move(ordered);
}

State& state() {
    static State s;
    return s;
}

std::string key(ConvPass pass, const ConvGeometry& g, bool double_precision) {
    return pass_name(pass) + " " + g.str() + (double_precision ? " float64" : " float32") + " cpu";
}

// Deterministic values in [-1, 1) for the scratch buffers (timing does not depend on them).
template <class T>
std::vector<T> scratch(std::int64_t n, int salt) {
    std::vector<T> v(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i) v[static_cast<std::size_t>(i)] = static_cast<T>(std::sin(double(i * 7 + salt)));
    return v;
}

template <class T>
void run_pass(ConvPass pass, ConvAlgo algo, const ConvGeometry& g, std::vector<T>& x, std::vector<T>& w,
              std::vector<T>& y) {
    switch (pass) {
        case ConvPass::Forward: return forward(algo, g, x.data(), w.data(), y.data());
        case ConvPass::BackwardData: return backward_data(algo, g, y.data(), w.data(), x.data());
        case ConvPass::BackwardWeight: return backward_weight(algo, g, x.data(), y.data(), w.data());
    }
}

template <class T>
TuneRecord measure_typed(ConvPass pass, const ConvGeometry& g, int repeats) {
    TuneRecord rec{pass, g, sizeof(T) == 8 ? "float64" : "float32", {}, ConvAlgo::Im2col, "fastest"};
    std::vector<T> x = scratch<T>(g.input_size(), 1), w = scratch<T>(g.weight_size(), 2), y = scratch<T>(g.output_size(), 3);
    const std::int64_t count_before = multiplies();
    double best = INFINITY;
    for (const ConvAlgorithm& a : tuning_order()) {
        if (!why_unsupported(a.algo, g).empty()) continue;
        double seconds = INFINITY;
        for (int i = 0; i <= repeats; ++i) {  // run 0 warms caches, pages and the thread pool
            const auto start = std::chrono::steady_clock::now();
            run_pass(pass, a.algo, g, x, w, y);
            const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
            // A run that is slow in itself, or far slower than the fastest so far, is not
            // worth timing again: the warm-up costs at most a little more than the runs
            // after it, so it cannot win (its one run is what the table shows).
            const bool hopeless = elapsed > kSlowRun || elapsed > kHopeless * best;
            if (i > 0 || hopeless) seconds = std::min(seconds, elapsed);
            if (hopeless) break;
        }
        rec.seconds.emplace_back(a.name, seconds);
        if (seconds < best) best = seconds, rec.pick = a.algo;
    }
    count_multiplies(count_before - multiplies());  // tuning runs are not the caller's work
    in_registry_order(rec.seconds);
    return rec;
}

}  // namespace

std::string pass_name(ConvPass pass) {
    switch (pass) {
        case ConvPass::Forward: return "forward";
        case ConvPass::BackwardData: return "backward_data";
        case ConvPass::BackwardWeight: return "backward_weight";
    }
    return "?";
}

void set_conv_algorithm(const std::string& name) {
    if (name != "auto") find_conv_algorithm(name);  // throws with the list of names
    std::lock_guard lock(state().mutex);
    state().setting = name;
}

std::string conv_algorithm_setting() {
    std::lock_guard lock(state().mutex);
    return state().setting;
}

TuneRecord measure(ConvPass pass, const ConvGeometry& g, bool double_precision, int repeats) {
    g.validate();
    return double_precision ? measure_typed<double>(pass, g, repeats) : measure_typed<float>(pass, g, repeats);
}

ConvAlgo choose(ConvPass pass, const ConvGeometry& g, bool double_precision) {
    const std::string setting = conv_algorithm_setting();
    if (setting != "auto") {
        const ConvAlgo fixed = find_conv_algorithm(setting).algo;
        return why_unsupported(fixed, g).empty() ? fixed : ConvAlgo::Im2col;
    }
    const std::string k = key(pass, g, double_precision);
    {
        std::lock_guard lock(state().mutex);
        if (auto it = state().cache.find(k); it != state().cache.end()) return it->second.pick;
    }
    // Measured outside the lock (the passes use the thread pool); a rare second
    // measurement of the same key by another thread only overwrites an equal choice.
    ConvGeometry slice = g;
    slice.batch = std::min(g.batch, kTuneImages);
    TuneRecord rec = measure(pass, slice, double_precision);
    rec.geometry = g;
    std::lock_guard lock(state().mutex);
    if (state().cache.emplace(k, rec).second) state().order.push_back(k);
    return rec.pick;
}

std::vector<TuneRecord> tune_table() {
    std::lock_guard lock(state().mutex);
    std::vector<TuneRecord> out;
    for (const std::string& k : state().order) out.push_back(state().cache.at(k));
    return out;
}

void clear_tune_cache() {
    std::lock_guard lock(state().mutex);
    state().cache.clear();
    state().order.clear();
}

std::string format_tune_table(const std::vector<TuneRecord>& records) {
    std::string out;
    char line[256];
    for (const TuneRecord& r : records) {
        std::snprintf(line, sizeof line, "%-44s %-15s %-7s", r.geometry.str().c_str(), pass_name(r.pass).c_str(),
                      r.dtype.c_str());
        out += line;
        for (const auto& [name, seconds] : r.seconds) {
            std::snprintf(line, sizeof line, "  %s %.3f ms", name.c_str(), seconds * 1e3);
            out += line;
        }
        out += "  -> " + conv_algorithm(r.pick).name + "\n";
    }
    return out;
}

}  // namespace gl::kernels::conv
