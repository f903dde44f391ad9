/// @file
/// @brief Record and replay of the student's results, so a process that never loaded the
/// student's code decides each graded test.
///
/// A graded test calls the student's code only through graded::student(), and checks the
/// result in the test body. The same test binary runs in three modes, chosen by the
/// environment:
///
/// - **direct** (no variable set: `meson test`, a student running the lab's tests): the
///   student's code runs and the checks judge it, as in any test;
/// - **compute** (`GRADLAB_GRADED_RECORD=FILE`): the grader runs the student's build in a
///   sandbox; every result (or the message of the exception it threw) is appended to
///   FILE. The checks still run, but only as feedback: this process's verdict is ignored;
/// - **check** (`GRADLAB_GRADED_REPLAY=FILE`): the grader runs the trusted build (the
///   pristine repository) on the student's FILE. The student's code is never called:
///   each graded::student() returns the recorded result, and the same checks, now in a
///   process the submission never touched, decide the test.
///
/// A record is keyed by the GoogleTest test's full name, the key the test gives, and the
/// number of earlier calls with that key in the test. The record file is written by
/// untrusted code, so the checker reads it as hostile input: every length is bounded by
/// the bytes that remain, a file cut short or full of garbage makes the affected tests
/// fail with a message, and nothing in it can crash the checker or make it allocate more
/// than the file's (capped) size.
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "tensor/tensor.hpp"

namespace gl::graded {

/// The three ways a graded test binary runs (see the file comment).
enum class Mode { Direct, Compute, Check };

/// The mode this process runs in, from GRADLAB_GRADED_RECORD / GRADLAB_GRADED_REPLAY
/// (read once; setting both is an error that fails every graded call).
Mode mode();

/// True where the code is trusted: direct mode and check mode (false in compute mode).
/// Timed items run only where this holds.
bool trusted();

/// The most bytes a record file may hold; the checker reads no further.
inline constexpr std::size_t kMaxRecordFileBytes = std::size_t{512} << 20;

/// A record that is missing, malformed or cannot be written. In check mode the test has
/// already been marked failed when this is thrown.
class RecordError : public std::runtime_error {
public:
    /// Wraps a message that says which record and what was wrong.
    explicit RecordError(const std::string& message) : std::runtime_error(message) {}
};

/// Serializes a result into a record's payload. Bytes are the host's (the checker runs
/// on the same machine).
class Writer {
public:
    /// Appends @p n raw bytes.
    void put_bytes(const void* data, std::size_t n) { bytes_.append(static_cast<const char*>(data), n); }
    /// Appends an arithmetic value's bytes (floating point bit-exactly, NaN payloads too).
    template <class T>
    void put(T value) {
        static_assert(std::is_arithmetic_v<T>);
        put_bytes(&value, sizeof value);
    }
    /// Appends a count or length.
    void put_size(std::size_t n) { put<std::uint64_t>(n); }
    /// The payload so far.
    const std::string& bytes() const { return bytes_; }

private:
    std::string bytes_;
};

/// Reads a payload back. Every read is bounds-checked; a problem throws RecordError.
class Reader {
public:
    /// Reads @p payload, the record described by @p what (for messages).
    Reader(std::string_view payload, std::string what) : rest_(payload), what_(std::move(what)) {}
    /// Copies the next @p n bytes out.
    void get_bytes(void* out, std::size_t n);
    /// The next arithmetic value.
    template <class T>
    T get() {
        static_assert(std::is_arithmetic_v<T>);
        T value{};
        get_bytes(&value, sizeof value);
        return value;
    }
    /// A count of elements that take at least @p min_bytes_each bytes each: never more
    /// than the bytes left could hold, so a forged count cannot cause a huge allocation.
    std::size_t get_count(std::size_t min_bytes_each);
    /// Throws unless every byte was read.
    void expect_end() const;
    /// Throws RecordError: the payload is malformed because of @p problem.
    [[noreturn]] void fail(const std::string& problem) const;

private:
    std::string_view rest_;
    std::string what_;
};

/// How a result type is written into a record and read back. Specialize it for a type of
/// your own with `static void write(Writer&, const T&)` and `static T read(Reader&)`.
template <class T, class Enable = void>
struct Codec;

/// @cond
template <class T>
struct Codec<T, std::enable_if_t<std::is_arithmetic_v<T> && !std::is_same_v<T, bool>>> {
    static void write(Writer& w, T v) { w.put(v); }
    static T read(Reader& r) { return r.get<T>(); }
};

template <>
struct Codec<bool> {
    static void write(Writer& w, bool v) { w.put<std::uint8_t>(v ? 1 : 0); }
    static bool read(Reader& r) {
        const auto b = r.get<std::uint8_t>();
        if (b > 1) r.fail("a bool that is neither 0 nor 1");
        return b == 1;
    }
};

template <>
struct Codec<std::string> {
    static void write(Writer& w, const std::string& s) {
        w.put_size(s.size());
        w.put_bytes(s.data(), s.size());
    }
    static std::string read(Reader& r) {
        std::string s(r.get_count(1), '\0');
        r.get_bytes(s.data(), s.size());
        return s;
    }
};

template <class T>
struct Codec<std::vector<T>> {
    static void write(Writer& w, const std::vector<T>& v) {
        w.put_size(v.size());
        for (const auto& x : v) Codec<T>::write(w, x);
    }
    static std::vector<T> read(Reader& r) {
        const std::size_t n = r.get_count(1);  // every element takes at least one byte
        std::vector<T> v;
        v.reserve(n);
        for (std::size_t i = 0; i < n; ++i) v.push_back(Codec<T>::read(r));
        return v;
    }
};

template <class T, std::size_t N>
struct Codec<std::array<T, N>> {
    static void write(Writer& w, const std::array<T, N>& a) {
        for (const auto& x : a) Codec<T>::write(w, x);
    }
    static std::array<T, N> read(Reader& r) {
        std::array<T, N> a{};
        for (auto& x : a) x = Codec<T>::read(r);
        return a;
    }
};

template <class A, class B>
struct Codec<std::pair<A, B>> {
    static void write(Writer& w, const std::pair<A, B>& p) {
        Codec<A>::write(w, p.first);
        Codec<B>::write(w, p.second);
    }
    static std::pair<A, B> read(Reader& r) {
        A a = Codec<A>::read(r);  // named: the order of reads matters
        B b = Codec<B>::read(r);
        return {std::move(a), std::move(b)};
    }
};

template <class... Ts>
struct Codec<std::tuple<Ts...>> {
    static void write(Writer& w, const std::tuple<Ts...>& t) {
        std::apply([&](const auto&... x) { (Codec<std::decay_t<decltype(x)>>::write(w, x), ...); }, t);
    }
    static std::tuple<Ts...> read(Reader& r) {
        return std::tuple<Ts...>{Codec<Ts>::read(r)...};  // braces: read left to right
    }
};

template <>
struct Codec<Tensor> {
    static void write(Writer& w, const Tensor& t);
    static Tensor read(Reader& r);
};
/// @endcond

namespace detail {
/// Compute mode: appends a record (kind 'v' a value, 'e' an exception's message).
void record(std::string_view key, char kind, std::string_view payload);
/// Check mode: the recorded value's payload; rethrows a recorded exception as
/// std::runtime_error; fails the test and throws RecordError when there is no record.
std::string replay(std::string_view key);
/// Check mode: marks the current test failed and throws RecordError(@p message).
[[noreturn]] void fail_record(const std::string& message);
/// The description of the current call (test, key) for messages.
std::string describe(std::string_view key);
/// Runs @p compute in compute mode and records its exception, if any, before rethrowing.
template <class Fn>
auto recording_exceptions(std::string_view key, Fn&& compute) -> decltype(compute()) {
    try {
        return compute();
    } catch (const std::exception& e) {
        record(key, 'e', e.what());
        throw;
    } catch (...) {
        record(key, 'e', "an exception that is not a std::exception");
        throw;
    }
}
}  // namespace detail

/// Runs `compute` (which calls the student's code) and returns its result.
/// Direct mode: just runs it. Compute mode: runs it and appends the result (or the
/// exception's message) to the record file. Check mode: does NOT run it; returns the
/// student's recorded result instead (a student exception is rethrown as
/// std::runtime_error with its message; a missing or malformed record fails the test).
/// The lambda must return everything the test's checks read.
template <class T, class Fn>
T student(std::string_view key, Fn&& compute) {
    switch (mode()) {
    case Mode::Direct:
        return compute();
    case Mode::Compute: {
        T value = detail::recording_exceptions(key, [&]() -> T { return compute(); });
        Writer w;
        Codec<T>::write(w, value);
        detail::record(key, 'v', w.bytes());
        return value;
    }
    case Mode::Check:
        break;
    }
    const std::string payload = detail::replay(key);
    try {
        Reader r(payload, detail::describe(key));
        T value = Codec<T>::read(r);
        r.expect_end();
        return value;
    } catch (const RecordError& e) {
        detail::fail_record(e.what());
    }
}

/// Like student() for code that returns nothing: only its exception is recorded.
template <class Fn>
void student_void(std::string_view key, Fn&& compute) {
    switch (mode()) {
    case Mode::Direct:
        compute();
        return;
    case Mode::Compute:
        detail::recording_exceptions(key, [&] { compute(); });
        detail::record(key, 'v', "");
        return;
    case Mode::Check:
        if (!detail::replay(key).empty()) detail::fail_record(detail::describe(key) + ": a value was recorded "
                                                              "where none is expected");
        return;
    }
}

/// For the record tests: switches the mode and record file as if the environment said so
/// (forgets what was loaded and counted so far).
void set_mode_for_testing(Mode mode, const std::string& path);

}  // namespace gl::graded
