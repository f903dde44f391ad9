// Bulk conversions. Each hardware path is compiled with a function-level target
// attribute, so the build runs on any x86-64 and the path is chosen at run time from
// what the CPU reports (sys/cpu_info.hpp).
#include "numerics/convert.hpp"

#include "base/error.hpp"
#include "base/x86.hpp"
#include "numerics/bfloat16.hpp"
#include "numerics/half.hpp"
#include "sys/cpu_info.hpp"


namespace gl::numerics {
namespace {

#if GL_X86
__attribute__((target("avx,f16c"))) void float_to_half_f16c(const float* src, std::uint16_t* dst, std::size_t n) {
    std::size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i), h);
    }
    for (; i < n; ++i) dst[i] = static_cast<std::uint16_t>(_cvtss_sh(src[i], _MM_FROUND_TO_NEAREST_INT));
}

__attribute__((target("avx,f16c"))) void half_to_float_f16c(const std::uint16_t* src, float* dst, std::size_t n) {
    std::size_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i))));
    for (; i < n; ++i) dst[i] = _cvtsh_ss(src[i]);
}

__attribute__((target("avx512f,avx512bf16,avx512vl"))) void float_to_bf16_avx512(const float* src, std::uint16_t* dst,
                                                                                std::size_t n) {
    std::size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        const __m256bh b = _mm512_cvtneps_pbh(_mm512_loadu_ps(src + i));
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i), (__m256i)b);
    }
    if (i < n) {
        const __mmask16 mask = static_cast<__mmask16>((1u << (n - i)) - 1);
        const __m256bh b = _mm512_cvtneps_pbh(_mm512_maskz_loadu_ps(mask, src + i));
        _mm256_mask_storeu_epi16(dst + i, mask, (__m256i)b);
    }
}
#endif

void require(ConvertPath path) {
    check(available(path), "conversion path " + name_of(path) + " needs a CPU feature this machine lacks "
                           "(see `gradlab info`)");
}

}  // namespace

std::string name_of(ConvertPath path) {
    switch (path) {
        case ConvertPath::Portable: return "portable";
        case ConvertPath::F16C: return "f16c";
        case ConvertPath::Avx512Bf16: return "avx512_bf16";
    }
    return "?";
}

bool available(ConvertPath path) {
    const auto& f = sys::cpu_info().features;
    switch (path) {
        case ConvertPath::Portable: return true;
        case ConvertPath::F16C: return GL_X86 && f.f16c && f.avx;
        case ConvertPath::Avx512Bf16: return GL_X86 && f.avx512_bf16 && f.avx512vl && f.avx512bw;
    }
    return false;
}

ConvertPath half_path() { return available(ConvertPath::F16C) ? ConvertPath::F16C : ConvertPath::Portable; }
ConvertPath bfloat16_path() { return ConvertPath::Portable; }

void float_to_half(const float* src, std::uint16_t* dst, std::size_t n, ConvertPath path) {
#if GL_X86
    if (path == ConvertPath::F16C) {
        require(path);
        return float_to_half_f16c(src, dst, n);
    }
#endif
    check(path == ConvertPath::Portable, "float_to_half: path " + name_of(path) + " does not convert to half");
    for (std::size_t i = 0; i < n; ++i) dst[i] = float_to_half_bits(src[i]);
}

void half_to_float(const std::uint16_t* src, float* dst, std::size_t n, ConvertPath path) {
#if GL_X86
    if (path == ConvertPath::F16C) {
        require(path);
        return half_to_float_f16c(src, dst, n);
    }
#endif
    check(path == ConvertPath::Portable, "half_to_float: path " + name_of(path) + " does not convert from half");
    for (std::size_t i = 0; i < n; ++i) dst[i] = half_bits_to_float(src[i]);
}

void float_to_bfloat16(const float* src, std::uint16_t* dst, std::size_t n, ConvertPath path) {
#if GL_X86
    if (path == ConvertPath::Avx512Bf16) {
        require(path);
        return float_to_bf16_avx512(src, dst, n);
    }
#endif
    check(path == ConvertPath::Portable, "float_to_bfloat16: path " + name_of(path) + " does not convert to bfloat16");
    for (std::size_t i = 0; i < n; ++i) dst[i] = float_to_bfloat16_bits(src[i]);
}

void float_to_half(const float* src, std::uint16_t* dst, std::size_t n) { float_to_half(src, dst, n, half_path()); }
void half_to_float(const std::uint16_t* src, float* dst, std::size_t n) { half_to_float(src, dst, n, half_path()); }
void float_to_bfloat16(const float* src, std::uint16_t* dst, std::size_t n) {
    float_to_bfloat16(src, dst, n, bfloat16_path());
}
void bfloat16_to_float(const std::uint16_t* src, float* dst, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) dst[i] = bfloat16_bits_to_float(src[i]);
}

bool is_16bit_float(DType dtype) { return dtype == DType::Float16 || dtype == DType::BFloat16; }

void to_float(DType from, const void* src, float* dst, std::size_t n) {
    check(is_16bit_float(from), "to_float: " + name_of(from) + " is not a 16-bit float type");
    const auto* s = static_cast<const std::uint16_t*>(src);
    from == DType::Float16 ? half_to_float(s, dst, n) : bfloat16_to_float(s, dst, n);
}

void from_float(DType to, const float* src, void* dst, std::size_t n) {
    check(is_16bit_float(to), "from_float: " + name_of(to) + " is not a 16-bit float type");
    auto* d = static_cast<std::uint16_t*>(dst);
    to == DType::Float16 ? float_to_half(src, d, n) : float_to_bfloat16(src, d, n);
}

}  // namespace gl::numerics
