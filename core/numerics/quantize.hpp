/// @file
/// @brief 8-bit integer quantization (claim Q-1): real value = scale * (q - zero_point),
/// with q an INT8 or UINT8, one (scale, zero point) per tensor or per output channel.
///
/// Owns: the affine mapping between floats and 8-bit integers (choosing scale and zero
/// point, symmetric or asymmetric; quantize with round half to even and saturation;
/// dequantize), and requantization of INT32 accumulators by a fixed-point multiplier and
/// a shift, so that an inference path never touches a float. Observers that choose the
/// range from data are in numerics/observer.hpp. Knows nothing about tensors: everything
/// here works on plain arrays.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace gl::quant {

/// The integers a quantized value may take: [-128, 127] for INT8, [0, 255] for UINT8.
struct QRange {
    std::int32_t qmin = -128;  ///< smallest representable integer
    std::int32_t qmax = 127;   ///< largest representable integer
    /// Number of steps between qmin and qmax (255 for 8 bits).
    std::int32_t steps() const { return qmax - qmin; }
};
/// INT8: [-128, 127] (weights).
inline constexpr QRange kInt8{-128, 127};
/// UINT8: [0, 255] (activations, the u8 operand of vpdpbusd).
inline constexpr QRange kUint8{0, 255};

/// How the zero point is chosen.
enum class QScheme {
    Symmetric,   ///< real 0 maps to the middle of the range (0 for INT8, 128 for UINT8);
                 ///< the range is [-max|x|, max|x|]: weights, whose sign is balanced
    Asymmetric,  ///< [min, max] maps onto [qmin, qmax]; the zero point is whatever integer
                 ///< real 0 lands on: activations after a ReLU, all >= 0
};
/// "symmetric" or "asymmetric".
std::string name_of(QScheme scheme);

/// One affine mapping: real = scale * (q - zero_point).
struct QParams {
    float scale = 1.0f;           ///< real size of one integer step (> 0)
    std::int32_t zero_point = 0;  ///< the integer that stands for real 0 (inside the range)
};

/// The parameters that map the real range [@p min, @p max] onto @p range. The range is
/// first widened to contain 0 (so that 0, the padding and ReLU value, is exact); an empty
/// range (min == max == 0) gives scale 1. Throws gl::Error for NaN or min > max.
QParams choose_qparams(float min, float max, QRange range, QScheme scheme);

/// Rounds @p x to the nearest integer, ties to the even one (2.5 -> 2, 3.5 -> 4), as
/// IEEE 754's default rounding does.
double round_half_even(double x);

/// q = clamp(round_half_even(x / scale) + zero_point, qmin, qmax): the nearest integer
/// in @p range; values past the ends saturate (infinities too). Throws gl::Error for NaN.
std::int32_t quantize_value(float x, QParams p, QRange range);
/// scale * (q - zero_point).
float dequantize_value(std::int32_t q, QParams p);

/// Quantizes @p n floats with one set of parameters into INT8 (range kInt8 or narrower).
void quantize(const float* x, std::size_t n, QParams p, std::int8_t* out, QRange range = kInt8);
/// Quantizes @p n floats into UINT8 (range kUint8 or narrower).
void quantize(const float* x, std::size_t n, QParams p, std::uint8_t* out, QRange range = kUint8);
/// Dequantizes @p n INT8 values.
void dequantize(const std::int8_t* q, std::size_t n, QParams p, float* out);
/// Dequantizes @p n UINT8 values.
void dequantize(const std::uint8_t* q, std::size_t n, QParams p, float* out);

/// Per output channel: @p w is [channels, per_channel] row-major (a Linear weight
/// [out, in]); row c is quantized with params[c]. Throws unless params has one entry
/// per channel.
void quantize_per_channel(const float* w, std::int64_t channels, std::int64_t per_channel,
                          const std::vector<QParams>& params, std::int8_t* out, QRange range = kInt8);
/// The inverse of quantize_per_channel.
void dequantize_per_channel(const std::int8_t* q, std::int64_t channels, std::int64_t per_channel,
                            const std::vector<QParams>& params, float* out);

/// A positive real multiplier as integers: real = multiplier * 2^-(31 + shift), with
/// multiplier in [2^30, 2^31) (a Q0.31 fraction in [0.5, 1)), so an INT32 accumulator is
/// scaled by one 32 x 32 -> 64-bit multiply and one rounding right shift.
struct FixedPointMultiplier {
    std::int32_t multiplier = 0;  ///< the Q0.31 mantissa, in [2^30, 2^31)
    std::int32_t shift = 0;       ///< extra right shift (negative: a left shift)
    /// The real number this stands for, exactly (as a double).
    double value() const;
};

/// The fixed-point form of @p real (relative error below 2^-31). Throws gl::Error unless
/// 2^-31 < real < 2^31 and finite.
FixedPointMultiplier to_fixed_point(double real);

/// Integer-only requantization of one accumulator: round_half_even(acc * m.value()) +
/// zero_point, clamped to @p range, computed with a 64-bit product and a rounding right
/// shift (no floating point). Inline: the INT8 GEMM's epilogue calls it per element.
inline std::int32_t requantize(std::int32_t acc, FixedPointMultiplier m, std::int32_t zero_point, QRange range) {
    // acc * multiplier fits in 64 bits (both below 2^31 in magnitude); divide by
    // 2^(31 + shift) with round half to even, in integers only.
    const std::int64_t product = static_cast<std::int64_t>(acc) * m.multiplier;
    const int right = 31 + m.shift;  // 0 .. 61 for multipliers to_fixed_point accepts
    std::int64_t q = product;
    if (right > 0) {
        // Branch-free round half to even (the GEMM epilogue runs this per element): with
        // product = floor * 2^right + remainder, adding half - 1 carries into the quotient
        // exactly when remainder > half, and the extra 1 when floor is odd makes the tie
        // remainder == half carry too. (C++20: >> of a negative value is arithmetic.)
        const std::int64_t half = std::int64_t{1} << (right - 1);
        const std::int64_t floor_is_odd = (product >> right) & 1;
        q = (product + half - 1 + floor_is_odd) >> right;
    }
    q += zero_point;
    return static_cast<std::int32_t>(q < range.qmin ? range.qmin : q > range.qmax ? range.qmax : q);
}

/// The multiplier that takes an accumulator of (input scale x weight scale) units to the
/// output's units: in_scale * w_scale / out_scale.
FixedPointMultiplier requantize_multiplier(float in_scale, float w_scale, float out_scale);

}  // namespace gl::quant
