/// @file
/// @brief Timing for tests and benchmarks: the best of several runs, the median of a
/// sample, seconds since a moment. Needs nothing from the core library, so the
/// nvcc-only build of the GPU benchmarks (tools/gpu/run_gpu_checks.sh) can compile it.
#pragma once

#include <algorithm>
#include <chrono>
#include <functional>
#include <vector>

namespace gl::testkit {

/// The clock every timing here reads.
using Clock = std::chrono::steady_clock;

/// Seconds from @p start to now.
double seconds_since(Clock::time_point start);

/// The middle value of @p v (the upper one of the two for an even count); 0 when empty.
double median(std::vector<double> v);

/// The element of @p v whose @p key (a function of an element giving a number) is the
/// median, the upper one of the two for an even count; @p v must not be empty.
template <class T, class Key>
T median_by(std::vector<T> v, Key key) {
    std::sort(v.begin(), v.end(), [&](const T& a, const T& b) { return key(a) < key(b); });
    return v.at(v.size() / 2);
}

/// Wall time in seconds of one run of @p fn.
double seconds_of(const std::function<void()>& fn);

/// Best wall time in seconds of @p fn over at least @p reps runs and at least
/// @p min_seconds in all (at most about 200 runs), after one untimed warm-up run (first
/// touch of the pages, caches, clocks).
double best_seconds(const std::function<void()>& fn, int reps, double min_seconds = 0.0);

}  // namespace gl::testkit
