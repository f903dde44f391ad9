#include "testkit/timing.hpp"

#include <algorithm>

namespace gl::testkit {

double seconds_since(Clock::time_point start) {
    return std::chrono::duration<double>(Clock::now() - start).count();
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0.0 : v[v.size() / 2];
}

double seconds_of(const std::function<void()>& fn) {
    const auto start = Clock::now();
    fn();
    return seconds_since(start);
}

double best_seconds(const std::function<void()>& fn, int reps, double min_seconds) {
    fn();  // warm-up
    double best = 1e30, spent = 0.0;
    for (int i = 0; i < reps || spent < min_seconds; ++i) {
        const double s = seconds_of(fn);
        best = std::min(best, s);
        spent += s;
        if (i > 200) break;
    }
    return best;
}

}  // namespace gl::testkit
