// The INT8 GEMMs' epilogue arithmetic (pack.hpp), one row of a tile at a time, each as a
// scalar loop and an AVX-512 one for CPUs that have it: the zero-point compensation of the
// raw sums, and the fused requantization.
//
// Why a vector loop for the compensation, out = raw - za * column_sum + row_term: the
// core is compiled for baseline x86-64 (SSE2), which has no 32-bit multiply-low, so GCC's
// vector code for it multiplies in 64-bit halves and shuffles them back. At N = 2048 that
// epilogue took 6-7% of a one-thread GEMM on Zen 5 (a build that skipped it beat oneDNN's
// whole GEMM); in zmm it is a load, a multiply, a subtract, an add and a store per 16.
//
// Why a hand-written vector loop: requantization is a 32 x 32 -> 64-bit product, a
// rounding right shift by a per-column amount, a clamp and a narrowing store, per output
// element. GCC does not vectorise that mix from the scalar code, and the scalar code
// (variable shifts, 64-bit multiplies) cost as much as the GEMM itself on the MLP's first
// layer (batch 1000, 128 outputs).
#include <algorithm>
#include <cstring>

#include "kernels/cpu/int8/pack.hpp"
#include "kernels/cpu/int8/requant_lanes.hpp"
#include "sys/cpu_info.hpp"

#if defined(__x86_64__)
// The AVX-512 intrinsics pass _mm512_undefined_epi32() to the masked builtins, which
// -Wmaybe-uninitialized reports at every use (GCC bug 105593).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#endif

namespace gl::kernels::int8 {
namespace {

void requantize_scalar(const std::int32_t* acc, const quant::FixedPointMultiplier* m, bool per_column,
                       std::int32_t zero_point, quant::QRange range, std::int64_t count, std::uint8_t* out) {
    for (std::int64_t c = 0; c < count; ++c)
        out[c] = static_cast<std::uint8_t>(quant::requantize(acc[c], m[per_column ? c : 0], zero_point, range));
}

#if defined(__x86_64__)
// Eight outputs per step, each in a 64-bit lane (requant_lanes.hpp). A
// FixedPointMultiplier is {multiplier, shift}, 8 bytes, so eight of them load as one zmm.
__attribute__((target("avx512f,avx512vl,avx512bw"))) void requantize_avx512(
    const std::int32_t* acc, const quant::FixedPointMultiplier* m, bool per_column, std::int32_t zero_point,
    quant::QRange range, std::int64_t count, std::uint8_t* out) {
    const RequantLanes k = requant_lanes(zero_point, range);
    const __m512i same_m = broadcast_multiplier(m[0]);  // per tensor: the one multiplier
    for (std::int64_t c = 0; c < count; c += 8) {
        const __mmask8 lanes = static_cast<__mmask8>(count - c >= 8 ? 0xFF : (1u << (count - c)) - 1);
        const __m512i a = _mm512_cvtepi32_epi64(_mm256_maskz_loadu_epi32(lanes, acc + c));
        const __m512i mv = per_column ? _mm512_maskz_loadu_epi64(lanes, m + c) : same_m;
        _mm_mask_storeu_epi8(out + c, lanes, _mm512_cvtepi64_epi8(requantize_lanes(a, mv, k)));
    }
}
#endif

void compensate_scalar(const std::int32_t* raw, std::int64_t step, const std::int32_t* column_sums, std::int32_t za,
                       std::int32_t row_term, std::int64_t count, std::int32_t* out) {
    // In unsigned arithmetic, which wraps as the vector loop's lanes do (signed overflow
    // would be undefined).
    const auto u = [](std::int32_t x) { return static_cast<std::uint32_t>(x); };
    for (std::int64_t c = 0; c < count; ++c)
        out[c] = static_cast<std::int32_t>(u(raw[c * step]) - u(za) * u(column_sums[c]) + u(row_term));
}

#if defined(__x86_64__)
__attribute__((target("avx512f"))) void compensate_avx512(const std::int32_t* raw, const std::int32_t* column_sums,
                                                          std::int32_t za, std::int32_t row_term, std::int64_t count,
                                                          std::int32_t* out) {
    const __m512i vza = _mm512_set1_epi32(za), vrow = _mm512_set1_epi32(row_term);
    for (std::int64_t c = 0; c < count; c += 16) {
        const __mmask16 lanes = static_cast<__mmask16>(count - c >= 16 ? 0xFFFF : (1u << (count - c)) - 1);
        const __m512i r = _mm512_maskz_loadu_epi32(lanes, raw + c);
        const __m512i s = _mm512_maskz_loadu_epi32(lanes, column_sums + c);
        _mm512_mask_storeu_epi32(out + c, lanes, _mm512_add_epi32(_mm512_sub_epi32(r, _mm512_mullo_epi32(vza, s)), vrow));
    }
}
#endif

bool has_avx512() {
    const auto& f = sys::cpu_info().features;
    return f.avx512f && f.avx512vl && f.avx512bw;
}

}  // namespace

void requantize_span(const std::int32_t* acc, const quant::FixedPointMultiplier* m, bool per_column,
                     std::int32_t zero_point, quant::QRange range, std::int64_t count, std::uint8_t* out) {
#if defined(__x86_64__)
    static const bool vector = has_avx512();
    if (vector) return requantize_avx512(acc, m, per_column, zero_point, range, count, out);
#endif
    requantize_scalar(acc, m, per_column, zero_point, range, count, out);
}

void compensate_span(const std::int32_t* raw, std::int64_t step, const std::int32_t* column_sums, std::int32_t za,
                     std::int32_t row_term, std::int64_t count, std::int32_t* out) {
#if defined(__x86_64__)
    static const bool vector = has_avx512();
    if (vector && step == 1) return compensate_avx512(raw, column_sums, za, row_term, count, out);
#endif
    compensate_scalar(raw, step, column_sums, za, row_term, count, out);
}

}  // namespace gl::kernels::int8
