// The profiler compiled out (meson -Dprofiler=false defines GRADLAB_PROFILER=0): this file
// is compiled with that macro and links no core library, so everything it uses must be
// in the header and must cost nothing. Cheap stand-in for building the whole second
// configuration in CI (bench/profiler_overhead.py measures that build).
#include <type_traits>

#include <gtest/gtest.h>

#include "profiler/profiler.hpp"

#if GRADLAB_PROFILER
#error "this test must be compiled with -DGRADLAB_PROFILER=0"
#endif

namespace {

// Nothing to record: a Scope is an empty object, and "recording" is a compile-time false,
// so a caller's `if (prof::recording())` branch is removed by the compiler.
static_assert(!gl::prof::kCompiledIn);
static_assert(std::is_empty_v<gl::prof::Scope>);
static_assert(std::is_trivially_destructible_v<gl::prof::Scope>);
static_assert(!gl::prof::recording());
static_assert(!gl::prof::Scope::on());

TEST(ProfilerCompiledOut, ScopesAndStepsDoNothingAndLinkNothing) {
    gl::prof::Scope scope(gl::prof::Category::Kernel, "matmul");
    scope.set_work(1e9, 1e6);
    scope.set_shapes("[64,784]");
    scope.set_name("renamed");
    gl::prof::mark_step(0);  // inline and empty: this program links no profiler.cpp
    EXPECT_FALSE(scope.on());
    EXPECT_FALSE(gl::prof::recording_shapes());
}

}  // namespace
