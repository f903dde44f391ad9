/// @file
/// @brief Error reporting for the whole library: one exception type and a check helper.
///
/// Owns: how gradlab reports bad input. Every message says what was wrong and, where
/// possible, what to do about it. Knows nothing about tensors or labs.
#pragma once

#include <stdexcept>
#include <string>

namespace gl {

/// The exception every gradlab function throws for bad input or a broken invariant.
class Error : public std::runtime_error {
public:
    /// Wraps a complete, human-readable message.
    explicit Error(const std::string& message) : std::runtime_error(message) {}
};

/// Thrown by handout stubs: a lab region the student has not written yet.
class NotImplemented : public Error {
public:
    /// @param lab two-digit lab number, e.g. "01"
    /// @param what the function or step that is missing, e.g. "matmul backward"
    NotImplemented(const std::string& lab, const std::string& what)
        : Error("lab " + lab + ": not implemented: " + what) {}
};

/// Throws gl::Error with @p message when @p condition is false.
inline void check(bool condition, const std::string& message) {
    if (!condition) throw Error(message);
}

}  // namespace gl
