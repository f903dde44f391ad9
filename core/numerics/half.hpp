/// @file
/// @brief IEEE 754 binary16 ("half", FP16): 1 sign bit, 5 exponent bits, 10 mantissa bits.
///
/// Owns: the half type and its conversions to and from float, written out in plain
/// integer code (round to nearest even, subnormals, infinities, quiet NaNs) so a reader
/// can see every case. Bulk and hardware-accelerated conversions are in convert.hpp;
/// this header knows nothing about tensors.
#pragma once

#include <cstdint>

namespace gl {

/// Converts @p value to the nearest binary16 bit pattern: round to nearest, ties to
/// even; values at or beyond 65520 become infinity; values too small for a normal half
/// become subnormals (or zero); a NaN stays a NaN, made quiet, with the top 9 bits of
/// its payload kept (as x86 F16C does).
std::uint16_t float_to_half_bits(float value);

/// The float a binary16 bit pattern stands for (exact: every half is a float); a NaN
/// comes back quiet with its payload kept.
float half_bits_to_float(std::uint16_t bits);

/// A binary16 number held as its bit pattern. Arithmetic goes through float: convert,
/// compute in FP32, convert back (what CPUs without native FP16 arithmetic do).
struct half {
    std::uint16_t bits = 0;  ///< the IEEE binary16 bit pattern

    /// +0.
    half() = default;
    /// The half nearest to @p value (round to nearest even).
    explicit half(float value) : bits(float_to_half_bits(value)) {}
    /// The value, exactly, as a float.
    explicit operator float() const { return half_bits_to_float(bits); }
    /// The half with bit pattern @p b.
    static constexpr half from_bits(std::uint16_t b) {
        half h;
        h.bits = b;
        return h;
    }

    static constexpr int kExponentBits = 5;   ///< width of the exponent field
    static constexpr int kMantissaBits = 10;  ///< stored fraction bits (11 with the implicit one)
    static constexpr int kBias = 15;          ///< exponent bias
};

}  // namespace gl
