// The fused requantization's arithmetic on eight sums in 64-bit lanes, shared by the
// epilogue's row loop (requant.cpp) and the micro-kernels that requantize a finished tile
// in registers (vnni_direct.cpp).
#pragma once

#if defined(__x86_64__)
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "numerics/quantize.hpp"

namespace gl::kernels::int8 {

/// The output's zero point and range, broadcast to 64-bit lanes once per call or tile.
struct RequantLanes {
    __m512i one, zero_point, qmin, qmax;
};

/// RequantLanes for @p zero_point and @p range.
__attribute__((target("avx512f"), always_inline)) inline RequantLanes requant_lanes(std::int32_t zero_point,
                                                                                   quant::QRange range) {
    return {_mm512_set1_epi64(1), _mm512_set1_epi64(zero_point), _mm512_set1_epi64(range.qmin),
            _mm512_set1_epi64(range.qmax)};
}

/// A FixedPointMultiplier {multiplier, shift} as one 64-bit lane, broadcast (per tensor).
__attribute__((target("avx512f"), always_inline)) inline __m512i broadcast_multiplier(const quant::FixedPointMultiplier& m) {
    long long lane = 0;
    static_assert(sizeof(quant::FixedPointMultiplier) == sizeof lane, "{multiplier, shift} is one 64-bit lane");
    std::memcpy(&lane, &m, sizeof lane);
    return _mm512_set1_epi64(lane);
}

/// quant::requantize on eight lanes: @p a holds eight sums (sign-extended to 64 bits), @p mv
/// their multipliers (a FixedPointMultiplier per lane: the multiplier in the low half, the
/// shift in the high half). vpmuldq multiplies the low halves (signed); the rounding is
/// quant::requantize's: add half - 1, plus 1 when the floor is odd, then shift; a right
/// shift of 0 (a multiplier of 1 or more) keeps the product as it is. Returns the clamped
/// values, one per 64-bit lane.
__attribute__((target("avx512f"), always_inline)) inline __m512i requantize_lanes(__m512i a, __m512i mv,
                                                                                 const RequantLanes& k) {
    const __m512i product = _mm512_mul_epi32(a, mv);  // low 32 bits of each lane, signed
    const __m512i right = _mm512_add_epi64(_mm512_srai_epi64(mv, 32), _mm512_set1_epi64(31));
    const __m512i half = _mm512_srli_epi64(_mm512_sllv_epi64(k.one, right), 1);  // 0 when right = 0
    const __m512i odd = _mm512_and_si512(_mm512_srav_epi64(product, right), k.one);
    const __m512i rounded =
        _mm512_srav_epi64(_mm512_add_epi64(product, _mm512_add_epi64(_mm512_sub_epi64(half, k.one), odd)), right);
    const __mmask8 shifted = _mm512_cmpgt_epi64_mask(right, _mm512_setzero_si512());
    const __m512i q = _mm512_add_epi64(_mm512_mask_blend_epi64(shifted, product, rounded), k.zero_point);
    return _mm512_min_epi64(_mm512_max_epi64(q, k.qmin), k.qmax);
}

}  // namespace gl::kernels::int8

#endif
