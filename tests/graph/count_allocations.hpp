// Counts heap allocations (every operator new in the program) while a scope is open: the
// test of "no allocation during a captured step". The program that includes
// count_allocations.cpp replaces the global operator new to count.
#pragma once

#include <cstdint>

namespace gl::graph::testing {

/// Counts the heap allocations made while it exists (all threads).
class AllocationCounter {
public:
    AllocationCounter();
    ~AllocationCounter();
    AllocationCounter(const AllocationCounter&) = delete;
    AllocationCounter& operator=(const AllocationCounter&) = delete;
    /// Allocations so far.
    std::int64_t count() const;

private:
    std::int64_t start_;
};

}  // namespace gl::graph::testing
