/// @file
/// @brief Test support: the message of the gl::Error a call throws, for message checks.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "base/error.hpp"

namespace gl::test {

/// Runs @p fn and returns the message of the gl::Error it throws; fails the test (and
/// returns "") if it throws nothing.
template <class Fn>
std::string thrown_message(Fn&& fn) {
    try {
        fn();
    } catch (const Error& e) {
        return e.what();
    }
    ADD_FAILURE() << "expected a gl::Error, but nothing was thrown";
    return "";
}

}  // namespace gl::test
