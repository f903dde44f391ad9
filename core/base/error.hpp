/// @file
/// @brief Error reporting for the whole library: one exception type and a check helper.
///
/// Owns: how gradlab reports bad input. Every message says what was wrong and, where
/// possible, what to do about it. Knows nothing about tensors or labs.
#pragma once

#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#if defined(__CUDACC__)
#include <cstdio>
#endif

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

/// What a lab handout puts where the student's CUDA code goes (tools/handout.py), since a
/// kernel compiled for a GPU cannot throw: on the host, and in kernels on the CPU runtime,
/// it throws NotImplemented(@p lab, @p what); in a kernel on a GPU it prints the same
/// message and stops the kernel with a trap, so the launch fails.
#if defined(__CUDACC__)
__host__ __device__ inline void not_implemented(const char* lab, const char* what) {
#if defined(__CUDA_ARCH__)
    printf("lab %s: not implemented: %s\n", lab, what);
    __trap();
#else
    throw NotImplemented(lab, what);
#endif
}
#else
[[noreturn]] inline void not_implemented(const char* lab, const char* what) {
    throw NotImplemented(lab, what);
}
#endif

/// Throws gl::Error with @p message when @p condition is false.
inline void check(bool condition, const std::string& message) {
    if (!condition) throw Error(message);
}

/// Throws gl::Error with the message @p make_message() returns when @p condition is false.
/// The message is built only on failure: for checks on a hot path (per sample, per
/// batch), where building a string that is thrown away would cost more than the check.
///
/// ```cpp
/// check(x.shape() == want, [&] { return "got " + shape_str(x.shape()); });
/// ```
template <class MakeMessage>
    requires std::is_invocable_r_v<std::string, MakeMessage>
inline void check(bool condition, MakeMessage&& make_message) {
    if (!condition) throw Error(std::forward<MakeMessage>(make_message)());
}

}  // namespace gl
