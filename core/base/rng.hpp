/// @file
/// @brief Seeded random numbers that give the same values on every platform.
///
/// Owns: the generator and the distributions the library uses. The standard library's
/// distributions are implementation-defined, so we write the few we need ourselves:
/// the same seed gives the same numbers with any compiler.
#pragma once

#include <cstdint>
#include <vector>

namespace gl {

/// A small, fast, seedable generator (SplitMix64 to seed, xoshiro256** to draw).
class Rng {
public:
    /// Seeds the generator; the same seed always gives the same sequence.
    explicit Rng(std::uint64_t seed = 0);

    /// A uniformly distributed 64-bit integer.
    std::uint64_t next_u64();
    /// A uniform double in [0, 1) with 53 random bits.
    double uniform();
    /// A uniform double in [lo, hi).
    double uniform(double lo, double hi);
    /// A standard normal sample (Box-Muller; the second value is kept for the next call).
    double normal();
    /// A uniform integer in [0, n); n must be positive.
    std::uint64_t below(std::uint64_t n);
    /// A random permutation of 0..n-1 (Fisher-Yates).
    std::vector<std::size_t> permutation(std::size_t n);

private:
    std::uint64_t s_[4];
    bool has_spare_ = false;
    double spare_ = 0.0;
};

}  // namespace gl
