// Test support for the CUDA runtimes: the message of the gl::cuda::Error a call throws,
// with its code checked.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "cuda_cpu/error.hpp"

namespace gl::test {

/// Runs @p fn and returns the message of the gl::cuda::Error it throws, checking its code
/// is @p code; fails the test (and returns "") if it throws nothing.
template <class Fn>
std::string error_of(Fn&& fn, gl::cuda::ErrorCode code) {
    try {
        fn();
    } catch (const gl::cuda::Error& e) {
        EXPECT_EQ(gl::cuda::error_name(e.code()), std::string(gl::cuda::error_name(code))) << e.what();
        return e.what();
    }
    ADD_FAILURE() << "expected a gl::cuda::Error(" << gl::cuda::error_name(code) << ")";
    return "";
}

}  // namespace gl::test
