/// @file
/// @brief bfloat16 (BF16): the top 16 bits of a float32, so 8 exponent bits (FP32's
/// range) and 7 mantissa bits.
///
/// Owns: the bfloat16 type and its conversions to and from float (round to nearest even
/// on the dropped 16 bits, subnormals kept, quiet NaNs). Knows nothing about tensors.
#pragma once

#include <cstdint>

namespace gl {

/// The bfloat16 nearest to @p value (round to nearest, ties to even). Subnormal floats
/// round to subnormal bfloat16s (no flush to zero); a NaN stays a NaN, made quiet, with
/// the top bits of its payload kept.
std::uint16_t float_to_bfloat16_bits(float value);

/// The float a bfloat16 bit pattern stands for: the pattern shifted into the top half
/// (exact). A signalling NaN is returned unchanged apart from that shift.
float bfloat16_bits_to_float(std::uint16_t bits);

/// A bfloat16 number held as its bit pattern; arithmetic goes through float.
struct bfloat16 {
    std::uint16_t bits = 0;  ///< the top 16 bits of the float32 it rounds

    /// +0.
    bfloat16() = default;
    /// The bfloat16 nearest to @p value.
    explicit bfloat16(float value) : bits(float_to_bfloat16_bits(value)) {}
    /// The value, exactly, as a float.
    explicit operator float() const { return bfloat16_bits_to_float(bits); }
    /// The bfloat16 with bit pattern @p b.
    static constexpr bfloat16 from_bits(std::uint16_t b) {
        bfloat16 h;
        h.bits = b;
        return h;
    }

    static constexpr int kExponentBits = 8;  ///< width of the exponent field (as float32)
    static constexpr int kMantissaBits = 7;  ///< stored fraction bits
    static constexpr int kBias = 127;        ///< exponent bias
};

}  // namespace gl
