// Graded multi-worker runs (labs 08 and 09): the student's code runs on n worker threads
// inside one graded::student call, which returns what every rank ended with. A run that
// the communicator reports as deadlocked (a CommError) or that throws fails the test with
// the error and a hint, instead of hanging.
#pragma once

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "dist/thread_comm.hpp"
#include "graded.hpp"

namespace gl::dist::testing {

/// fn(comm) on @p n worker threads (each waits @p timeout_s for a peer), in the student's
/// code; each rank's result in rank order, or nullopt after a failure that names
/// @p hint.
template <class T, class Fn>
std::optional<std::vector<T>> per_rank(const std::string& key, int n, Fn fn, double timeout_s, const std::string& hint) {
    const auto [results, deadlock] = graded::student<std::pair<std::vector<T>, std::string>>(key, [&] {
        std::vector<T> out(static_cast<std::size_t>(n));
        try {
            run_threads(n, [&](Communicator& c) { out[static_cast<std::size_t>(c.rank())] = fn(c); }, timeout_s);
        } catch (const CommError& e) {
            return std::pair{std::vector<T>{}, std::string(e.what())};
        }
        return std::pair{out, std::string()};
    });
    if (!deadlock.empty()) {
        ADD_FAILURE() << "with " << n << " workers, your code deadlocked or a rank waited for a message that never "
                      << "came: " << deadlock << "\nHint: " << hint;
        return std::nullopt;
    }
    if (results.size() != static_cast<std::size_t>(n)) {
        ADD_FAILURE() << "the recorded run has " << results.size() << " ranks, not " << n;
        return std::nullopt;
    }
    return results;
}

}  // namespace gl::dist::testing
