/// @file
/// @brief Converting arrays between float32 and the 16-bit formats, with the CPU's own
/// conversion instructions where it has them (F16C, AVX512-BF16) and this library's
/// integer code everywhere else.
///
/// Owns: bulk conversions and the choice between their implementations. Tensors,
/// kernels and the cast op call these; knows nothing about tensors itself.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "numerics/dtype.hpp"

namespace gl::numerics {

/// How a bulk conversion is done.
enum class ConvertPath {
    Portable,    ///< the integer code of half.cpp / bfloat16.cpp, one element at a time
    F16C,        ///< x86 F16C vcvtps2ph / vcvtph2ps (float <-> half), 8 at a time
    Avx512Bf16,  ///< AVX512-BF16 vcvtneps2bf16 (float -> bfloat16), 16 at a time; note
                 ///< that it flushes subnormal inputs to zero, unlike the portable code
};

/// "portable", "f16c" or "avx512_bf16".
std::string name_of(ConvertPath path);
/// True when this CPU can run @p path.
bool available(ConvertPath path);
/// The path the plain (path-less) half conversions use here: F16C when present.
ConvertPath half_path();
/// The path the plain bfloat16 conversions use: always Portable, because the hardware
/// instruction flushes subnormals (and the portable loop is as fast as memory anyway).
ConvertPath bfloat16_path();

/// float -> half for @p n elements, rounding to nearest even, by the fastest exact path.
void float_to_half(const float* src, std::uint16_t* dst, std::size_t n);
/// half -> float for @p n elements (exact).
void half_to_float(const std::uint16_t* src, float* dst, std::size_t n);
/// float -> bfloat16 for @p n elements, rounding to nearest even (subnormals kept).
void float_to_bfloat16(const float* src, std::uint16_t* dst, std::size_t n);
/// bfloat16 -> float for @p n elements (exact).
void bfloat16_to_float(const std::uint16_t* src, float* dst, std::size_t n);

/// float -> half through a chosen @p path (Portable or F16C); throws gl::Error when the
/// CPU lacks it.
void float_to_half(const float* src, std::uint16_t* dst, std::size_t n, ConvertPath path);
/// half -> float through a chosen @p path (Portable or F16C).
void half_to_float(const std::uint16_t* src, float* dst, std::size_t n, ConvertPath path);
/// float -> bfloat16 through a chosen @p path (Portable or Avx512Bf16).
void float_to_bfloat16(const float* src, std::uint16_t* dst, std::size_t n, ConvertPath path);

/// Widens @p n elements of a 16-bit float type (@p from is Float16 or BFloat16) to float.
void to_float(DType from, const void* src, float* dst, std::size_t n);
/// Rounds @p n floats to a 16-bit float type (@p to is Float16 or BFloat16).
void from_float(DType to, const float* src, void* dst, std::size_t n);

/// True for Float16 and BFloat16.
bool is_16bit_float(DType dtype);

}  // namespace gl::numerics
