// Helpers of the graded contract tests (tests/labs/test_labNN_contract.cpp): buffers with
// canary guard zones, so that a write past a buffer's end, or past a thread's range into
// the padding of a matrix, fails the test in a release build too (a sanitizer build also
// reports it, and reports reads past the end, which a canary cannot see).
#pragma once

#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "base/rng.hpp"

namespace gl::labs {

/// A bit pattern no computation produces: a signalling NaN with a payload (float) or its
/// double analogue; 0xA5 for bytes. Compared bit for bit, so a NaN written over it is still noticed.
template <class T>
T canary() {
    if constexpr (sizeof(T) == 1) return std::bit_cast<T>(std::uint8_t{0xA5u});
    else if constexpr (sizeof(T) == 4) return std::bit_cast<T>(std::uint32_t{0x7FA5A5A5u});
    else return std::bit_cast<T>(std::uint64_t{0x7FF4A5A5A5A5A5A5ull});
}

template <class T>
bool is_canary(T x) {
    const T c = canary<T>();
    return std::memcmp(&x, &c, sizeof(T)) == 0;
}

/// @p n elements between two guard zones of @p guard canaries each.
template <class T>
class Guarded {
public:
    explicit Guarded(std::size_t n, std::size_t guard = 64) : n_(n), guard_(guard), all_(n + 2 * guard, canary<T>()) {}
    T* data() { return all_.data() + guard_; }
    const T* data() const { return all_.data() + guard_; }
    std::size_t size() const { return n_; }
    T& operator[](std::size_t i) { return data()[i]; }
    const T& operator[](std::size_t i) const { return data()[i]; }
    std::size_t guard() const { return guard_; }
    /// The buffer with its guard zones: what a test reads back after the call.
    const std::vector<T>& all() const { return all_; }

private:
    std::size_t n_, guard_;
    std::vector<T> all_;
};

/// "" when both guard zones of @p all (a Guarded's all()) are intact, else which element
/// was overwritten.
template <class T>
std::string guard_damage(const std::vector<T>& all, std::size_t guard) {
    const std::size_t n = all.size() - 2 * guard;
    for (std::size_t i = 0; i < guard; ++i) {
        if (!is_canary(all[guard - 1 - i])) return "wrote element -" + std::to_string(i + 1) + " (before the buffer)";
        if (!is_canary(all[guard + n + i]))
            return "wrote element " + std::to_string(n + i) + " of a buffer of " + std::to_string(n) + " (past its end)";
    }
    return "";
}

/// A uniform integer in [lo, hi].
inline std::int64_t pick(Rng& rng, std::int64_t lo, std::int64_t hi) {
    return lo + static_cast<std::int64_t>(rng.below(static_cast<std::uint64_t>(hi - lo + 1)));
}

}  // namespace gl::labs
