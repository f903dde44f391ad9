// Affine 8-bit quantization: real = scale * (q - zero_point).
//
// Why these choices: round half to even is what the hardware's conversions do (and has no
// bias on ties: 0.5 and 1.5 go one down, one up); saturation rather than wrap-around,
// because 127 + 1 wrapping to -128 turns the largest activation into the smallest; and 0
// is always exactly representable, because zero padding and ReLU produce exact zeros by
// the million.
#include "numerics/quantize.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "base/error.hpp"

namespace gl::quant {

std::string name_of(QScheme scheme) { return scheme == QScheme::Symmetric ? "symmetric" : "asymmetric"; }

QParams choose_qparams(float min, float max, QRange range, QScheme scheme) {
    check(!std::isnan(min) && !std::isnan(max), "choose_qparams: the observed range is NaN (the data has NaNs)");
    check(min <= max, "choose_qparams: min " + std::to_string(min) + " > max " + std::to_string(max));
    check(range.qmin < range.qmax, "choose_qparams: empty integer range");
    // Float bounds that are infinite would give an infinite scale: clip to the float range.
    const double lo = std::min(0.0, std::max(static_cast<double>(min), -double(std::numeric_limits<float>::max())));
    const double hi = std::max(0.0, std::min(static_cast<double>(max), double(std::numeric_limits<float>::max())));
    QParams p;
    if (scheme == QScheme::Symmetric) {
        const double amax = std::max(-lo, hi);
        p.scale = static_cast<float>(amax / (range.steps() / 2.0));
        p.zero_point = (range.qmin + range.qmax + 1) / 2;  // 0 for INT8, 128 for UINT8
    } else {
        p.scale = static_cast<float>((hi - lo) / range.steps());
        // The integer real 0 lands on; lo <= 0 <= hi keeps it inside the range.
        const double zp = range.qmin - lo / std::max(static_cast<double>(p.scale), 1e-300);
        p.zero_point = static_cast<std::int32_t>(std::clamp(round_half_even(zp), double(range.qmin), double(range.qmax)));
    }
    if (!(p.scale > 0.0f) || !std::isfinite(p.scale)) {  // an empty range: any scale maps 0 to 0
        p.scale = 1.0f;
        p.zero_point = scheme == QScheme::Symmetric ? p.zero_point : range.qmin;
    }
    return p;
}

double round_half_even(double x) { return std::nearbyint(x); }  // the default mode: to nearest, ties to even

std::int32_t quantize_value(float x, QParams p, QRange range) {
    // LAB 12 BEGIN: quantize one value (round half to even, zero point, saturation)
    // Refuse NaN (it has no nearest integer) and a scale that is not positive, with a
    // gl::Error. Then x / scale in double (exact enough that ties are real ties), rounded
    // half to even (round_half_even), plus the zero point, then saturated to the range:
    // clamp *after* adding the zero point, since the range is that of the stored integer.
    if (std::isnan(x)) throw Error("quantize: NaN input (a NaN has no nearest integer; find where it came from)");
    if (!(p.scale > 0.0f)) throw Error("quantize: the scale must be positive");
    const double q = round_half_even(static_cast<double>(x) / p.scale) + p.zero_point;
    return static_cast<std::int32_t>(std::clamp(q, double(range.qmin), double(range.qmax)));
    // LAB 12 END
}

float dequantize_value(std::int32_t q, QParams p) {
    // LAB 12 BEGIN: dequantize one value
    // The real value an integer stands for: scale * (q - zero_point).
    return p.scale * static_cast<float>(q - p.zero_point);
    // LAB 12 END
}

namespace {

template <class Q>
void quantize_into(const float* x, std::size_t n, QParams p, Q* out, QRange range) {
    check(range.qmin >= std::numeric_limits<Q>::min() && range.qmax <= std::numeric_limits<Q>::max(),
          "quantize: the range does not fit the 8-bit type");
    for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<Q>(quantize_value(x[i], p, range));
}

template <class Q>
void dequantize_from(const Q* q, std::size_t n, QParams p, float* out) {
    for (std::size_t i = 0; i < n; ++i) out[i] = dequantize_value(q[i], p);
}

void check_channels(std::int64_t channels, const std::vector<QParams>& params) {
    check(static_cast<std::int64_t>(params.size()) == channels,
          "per-channel quantization: " + std::to_string(params.size()) + " parameter sets for " +
              std::to_string(channels) + " channels");
}

}  // namespace

void quantize(const float* x, std::size_t n, QParams p, std::int8_t* out, QRange range) {
    quantize_into(x, n, p, out, range);
}
void quantize(const float* x, std::size_t n, QParams p, std::uint8_t* out, QRange range) {
    quantize_into(x, n, p, out, range);
}
void dequantize(const std::int8_t* q, std::size_t n, QParams p, float* out) { dequantize_from(q, n, p, out); }
void dequantize(const std::uint8_t* q, std::size_t n, QParams p, float* out) { dequantize_from(q, n, p, out); }

void quantize_per_channel(const float* w, std::int64_t channels, std::int64_t per_channel,
                          const std::vector<QParams>& params, std::int8_t* out, QRange range) {
    check_channels(channels, params);
    for (std::int64_t c = 0; c < channels; ++c)
        quantize_into(w + c * per_channel, static_cast<std::size_t>(per_channel), params[c], out + c * per_channel,
                      range);
}

void dequantize_per_channel(const std::int8_t* q, std::int64_t channels, std::int64_t per_channel,
                            const std::vector<QParams>& params, float* out) {
    check_channels(channels, params);
    for (std::int64_t c = 0; c < channels; ++c)
        dequantize_from(q + c * per_channel, static_cast<std::size_t>(per_channel), params[c], out + c * per_channel);
}

double FixedPointMultiplier::value() const { return std::ldexp(static_cast<double>(multiplier), -(31 + shift)); }

FixedPointMultiplier to_fixed_point(double real) {
    check(std::isfinite(real) && real > std::ldexp(1.0, -31) && real < std::ldexp(1.0, 31),
          "requantization multiplier " + std::to_string(real) + " is outside (2^-31, 2^31); check the scales");
    int exponent = 0;
    const double fraction = std::frexp(real, &exponent);  // real = fraction * 2^exponent, fraction in [0.5, 1)
    auto mantissa = static_cast<std::int64_t>(std::llround(fraction * 2147483648.0));  // Q0.31
    if (mantissa == (std::int64_t{1} << 31)) {  // rounded up to 1.0: renormalise
        mantissa /= 2;
        ++exponent;
    }
    return {static_cast<std::int32_t>(mantissa), -exponent};
}

FixedPointMultiplier requantize_multiplier(float in_scale, float w_scale, float out_scale) {
    return to_fixed_point(static_cast<double>(in_scale) * w_scale / out_scale);
}

}  // namespace gl::quant
