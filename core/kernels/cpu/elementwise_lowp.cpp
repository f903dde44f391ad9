// Element-wise kernels on 16-bit storage, side by side with the FP32 ones of
// elementwise.hpp (same arithmetic, same threading). Each has a portable loop
// (plain C++, the 16-bit conversions of numerics/) and an AVX-512 version that handles 16
// elements per step: vcvtph2ps / vcvtps2ph for half, a shift and the round-to-nearest-even
// bit trick for bfloat16. Both give bit-identical results.
#include "kernels/cpu/elementwise_lowp.hpp"

#include <algorithm>
#include <cmath>

#include "base/x86.hpp"
#include "numerics/bfloat16.hpp"
#include "numerics/half.hpp"
#include "parallel/thread_pool.hpp"
#include "sys/cpu_info.hpp"

#if GL_X86
// GCC 12's AVX-512 intrinsics initialise their "undefined" pass-through operand from
// itself, which -Wmaybe-uninitialized reports at every use (GCC bug 105593).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace gl::kernels {
namespace {

#if GL_X86
#define GL_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl")))

GL_AVX512 __m512 load_half(const std::uint16_t* p, __mmask16 m) {
    return _mm512_maskz_cvtph_ps(m, _mm256_maskz_loadu_epi16(m, p));
}
GL_AVX512 void store_half(std::uint16_t* p, __m512 v, __mmask16 m) {
    _mm256_mask_storeu_epi16(p, m, _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}
GL_AVX512 __m512 load_bf16(const std::uint16_t* p, __mmask16 m) {
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, p)), 16));
}
GL_AVX512 void store_bf16(std::uint16_t* p, __m512 v, __mmask16 m) {
    // Round to nearest even on the 16 dropped bits; a NaN keeps its top bits, made quiet.
    const __m512i x = _mm512_castps_si512(v);
    const __m512i lowest_kept = _mm512_and_si512(_mm512_srli_epi32(x, 16), _mm512_set1_epi32(1));
    __m512i r = _mm512_srli_epi32(_mm512_add_epi32(x, _mm512_add_epi32(_mm512_set1_epi32(0x7FFF), lowest_kept)), 16);
    const __mmask16 nan = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
    r = _mm512_mask_or_epi32(r, nan, _mm512_srli_epi32(x, 16), _mm512_set1_epi32(0x40));
    _mm256_mask_storeu_epi16(p, m, _mm512_cvtepi32_epi16(r));
}
__mmask16 tail_mask(std::size_t left) {
    return static_cast<__mmask16>(left >= 16 ? 0xFFFFu : (1u << left) - 1u);
}

GL_AVX512 void axpy_f16_avx512(std::size_t n, float a, const std::uint16_t* x, std::uint16_t* y) {
    const __m512 av = _mm512_set1_ps(a);
    for (std::size_t i = 0; i < n; i += 16) {
        const __mmask16 m = tail_mask(n - i);
        store_half(y + i, _mm512_fmadd_ps(av, load_half(x + i, m), load_half(y + i, m)), m);
    }
}
GL_AVX512 void axpy_bf16_avx512(std::size_t n, float a, const std::uint16_t* x, std::uint16_t* y) {
    const __m512 av = _mm512_set1_ps(a);
    for (std::size_t i = 0; i < n; i += 16) {
        const __mmask16 m = tail_mask(n - i);
        store_bf16(y + i, _mm512_fmadd_ps(av, load_bf16(x + i, m), load_bf16(y + i, m)), m);
    }
}
GL_AVX512 void relu_f16_avx512(std::size_t n, const std::uint16_t* x, std::uint16_t* y) {
    for (std::size_t i = 0; i < n; i += 16) {
        const __mmask16 m = tail_mask(n - i);
        store_half(y + i, _mm512_max_ps(load_half(x + i, m), _mm512_setzero_ps()), m);
    }
}
#endif

bool use_avx512() {
    const auto& f = sys::cpu_info().features;
    return GL_X86 && f.avx512f && f.avx512bw && f.avx512vl;
}

void axpy_f16_range(std::size_t n, float a, const std::uint16_t* x, std::uint16_t* y) {
#if GL_X86
    if (use_avx512()) return axpy_f16_avx512(n, a, x, y);
#endif
    for (std::size_t i = 0; i < n; ++i)
        y[i] = float_to_half_bits(std::fma(a, half_bits_to_float(x[i]), half_bits_to_float(y[i])));
}

void axpy_bf16_range(std::size_t n, float a, const std::uint16_t* x, std::uint16_t* y) {
#if GL_X86
    if (use_avx512()) return axpy_bf16_avx512(n, a, x, y);
#endif
    for (std::size_t i = 0; i < n; ++i)
        y[i] = float_to_bfloat16_bits(std::fma(a, bfloat16_bits_to_float(x[i]), bfloat16_bits_to_float(y[i])));
}

void relu_f16_range(std::size_t n, const std::uint16_t* x, std::uint16_t* y) {
#if GL_X86
    if (use_avx512()) return relu_f16_avx512(n, x, y);
#endif
    for (std::size_t i = 0; i < n; ++i) y[i] = float_to_half_bits(std::max(half_bits_to_float(x[i]), 0.0f));
}

// Elements per thread at least: below this, waking a second thread costs more than it saves.
constexpr std::int64_t kGrain = 1 << 16;

}  // namespace

bool elementwise_lowp_uses_avx512() { return use_avx512(); }

// Large arrays are split over the intra-op threads, as the FP32 kernels are: one core
// alone cannot draw the full memory bandwidth.
void axpy_f16(std::size_t n, float a, const std::uint16_t* x, std::uint16_t* y) {
    parallel_for(static_cast<std::int64_t>(n), kGrain, [&](std::int64_t b, std::int64_t e) {
        axpy_f16_range(static_cast<std::size_t>(e - b), a, x + b, y + b);
    });
}

void axpy_bf16(std::size_t n, float a, const std::uint16_t* x, std::uint16_t* y) {
    parallel_for(static_cast<std::int64_t>(n), kGrain, [&](std::int64_t b, std::int64_t e) {
        axpy_bf16_range(static_cast<std::size_t>(e - b), a, x + b, y + b);
    });
}

void relu_f16(std::size_t n, const std::uint16_t* x, std::uint16_t* y) {
    parallel_for(static_cast<std::int64_t>(n), kGrain, [&](std::int64_t b, std::int64_t e) {
        relu_f16_range(static_cast<std::size_t>(e - b), x + b, y + b);
    });
}

}  // namespace gl::kernels
