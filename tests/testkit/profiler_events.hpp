/// @file
/// @brief Hand-made profiler events for the tests of the profiler and of Lab 10: traces
/// with known nesting and known answers, written as one line per scope.
#pragma once

#include <cstdint>

#include "profiler/profiler.hpp"

namespace gl::test {

/// A finished scope @p name of category @p c on thread @p tid of process @p pid, from
/// @p start to @p end nanoseconds.
inline prof::Event ev(const char* name, prof::Category c, int tid, std::int64_t start, std::int64_t end,
                      int pid = 0) {
    prof::Event e;
    e.name = name;
    e.category = c;
    e.pid = pid;
    e.tid = tid;
    e.start_ns = start;
    e.end_ns = end;
    return e;
}

}  // namespace gl::test
