// float <-> IEEE binary16, in integer code. Layout of both formats:
//
//   float32  s eeeeeeee mmmmmmmmmmmmmmmmmmmmmmm   bias 127
//   half     s eeeee    mmmmmmmmmm                bias 15
//
// A normal half is (-1)^s * 1.m * 2^(e - 15); exponent field 0 holds zero and the
// subnormals 0.m * 2^-14 (steps of 2^-24); field 31 holds infinity (m = 0) and NaN.
#include "numerics/half.hpp"

#include <bit>

#include "base/error.hpp"

namespace gl {

std::uint16_t float_to_half_bits(float value) {
    // LAB 05 BEGIN: float to half conversion (round to nearest even, subnormals, inf, NaN)
    // Work on the float's bits: split off the sign, then handle by magnitude:
    //   NaN -> quiet NaN keeping the payload's top bits; >= 65520 -> infinity;
    //   below 2^-14 -> a subnormal (round mant * 2^(exp - 126) to an integer);
    //   otherwise rebias the exponent and round away the 13 low mantissa bits.
    // "Round to nearest even": look at the bits shifted out; above half -> round up;
    // exactly half -> round up only if the kept part is odd.
    const std::uint32_t x = std::bit_cast<std::uint32_t>(value);
    const auto sign = static_cast<std::uint16_t>((x >> 16) & 0x8000u);
    const std::uint32_t magnitude = x & 0x7FFFFFFFu;
    if (magnitude >= 0x7F800000u) {  // infinity or NaN
        if (magnitude == 0x7F800000u) return sign | 0x7C00u;
        return static_cast<std::uint16_t>(sign | 0x7E00u | ((magnitude >> 13) & 0x03FFu));
    }
    if (magnitude >= 0x477FF000u) return sign | 0x7C00u;  // >= 65520: rounds past 65504
    const std::uint32_t exponent = magnitude >> 23;
    std::uint32_t kept, dropped, halfway;
    if (exponent < 113) {  // below 2^-14: a subnormal half (or zero)
        if (exponent < 102) return sign;  // below 2^-25: rounds to zero
        const std::uint32_t mantissa = (magnitude & 0x007FFFFFu) | 0x00800000u;  // with the 1
        const std::uint32_t shift = 126 - exponent;  // 14 .. 24
        kept = mantissa >> shift;
        dropped = mantissa & ((1u << shift) - 1);
        halfway = 1u << (shift - 1);
    } else {  // a normal half: rebias the exponent (127 -> 15), keep 10 mantissa bits
        kept = ((exponent - 112) << 10) | ((magnitude >> 13) & 0x03FFu);
        dropped = magnitude & 0x1FFFu;
        halfway = 0x1000u;
    }
    // A carry out of the mantissa correctly bumps the exponent (0x3FF + 1 = next binade).
    if (dropped > halfway || (dropped == halfway && (kept & 1u))) ++kept;
    return static_cast<std::uint16_t>(sign | kept);
    // LAB 05 END
}

float half_bits_to_float(std::uint16_t bits) {
    // LAB 05 BEGIN: half to float conversion (subnormals, inf, NaN)
    // Every half is exactly a float. Rebias normal exponents (15 -> 127); normalise a
    // subnormal (shift its mantissa up until the leading 1 reaches bit 10, lowering the
    // exponent each time); keep infinity and make a NaN quiet (set the top mantissa bit).
    const std::uint32_t sign = static_cast<std::uint32_t>(bits & 0x8000u) << 16;
    const std::uint32_t exponent = (bits >> 10) & 0x1Fu;
    std::uint32_t mantissa = bits & 0x03FFu;
    std::uint32_t out;
    if (exponent == 0x1F) {  // infinity or NaN
        out = sign | 0x7F800000u | (mantissa ? (0x00400000u | (mantissa << 13)) : 0u);
    } else if (exponent == 0) {
        if (mantissa == 0) {
            out = sign;  // +-0
        } else {  // subnormal: 0.m * 2^-14
            std::int32_t e = -14;
            while ((mantissa & 0x0400u) == 0) {
                mantissa <<= 1;
                --e;
            }
            out = sign | (static_cast<std::uint32_t>(e + 127) << 23) | ((mantissa & 0x03FFu) << 13);
        }
    } else {
        out = sign | ((exponent + 112) << 23) | (mantissa << 13);
    }
    return std::bit_cast<float>(out);
    // LAB 05 END
}

}  // namespace gl
