// float <-> bfloat16. bfloat16 is the top half of a float32, so converting is rounding
// away the low 16 bits: add 0x7FFF plus the lowest kept bit (ties go to even), then
// shift. A carry out of the mantissa bumps the exponent, and one out of the largest
// finite exponent gives infinity, which is the right answer there too.
#include "numerics/bfloat16.hpp"

#include <bit>

namespace gl {

std::uint16_t float_to_bfloat16_bits(float value) {
    const std::uint32_t x = std::bit_cast<std::uint32_t>(value);
    if ((x & 0x7FFFFFFFu) > 0x7F800000u)  // NaN: keep sign and payload top, make it quiet
        return static_cast<std::uint16_t>((x >> 16) | 0x0040u);
    const std::uint32_t lowest_kept = (x >> 16) & 1u;
    return static_cast<std::uint16_t>((x + 0x7FFFu + lowest_kept) >> 16);
}

float bfloat16_bits_to_float(std::uint16_t bits) {
    return std::bit_cast<float>(static_cast<std::uint32_t>(bits) << 16);
}

}  // namespace gl
