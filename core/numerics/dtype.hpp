/// @file
/// @brief The element types gradlab computes with: their names, sizes and C++ types.
///
/// Owns: the DType enumeration and what each type is (bytes, name, C++ type). Tensors
/// store elements of these types, kernels and conversions are chosen by them; this
/// header knows nothing about tensors (tensor/dtype.hpp adds what tensors need).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "numerics/bfloat16.hpp"
#include "numerics/half.hpp"

namespace gl {

/// The element type of a tensor. Float32 and Float64 have full op support. Float16 and
/// BFloat16 are storage types: they convert to and from the others (to_dtype, cast),
/// matmul computes with them (FP32 accumulation) and gradients flow through them, while
/// the other ops ask for float32 (see ops/autocast.hpp). Int8 is for quantization, Int32
/// holds labels and indices.
enum class DType : std::uint8_t { Float32, Float64, Float16, BFloat16, Int8, Int32 };

/// Bytes one element of @p dtype occupies.
std::size_t size_of(DType dtype);
/// The conventional short name ("float32", "float16", ...).
std::string name_of(DType dtype);

/// Maps a C++ element type to its DType, e.g. dtype_of<float>() == DType::Float32.
template <class T>
constexpr DType dtype_of();
/// @cond
template <> constexpr DType dtype_of<float>() { return DType::Float32; }
template <> constexpr DType dtype_of<double>() { return DType::Float64; }
template <> constexpr DType dtype_of<half>() { return DType::Float16; }
template <> constexpr DType dtype_of<bfloat16>() { return DType::BFloat16; }
template <> constexpr DType dtype_of<std::int8_t>() { return DType::Int8; }
template <> constexpr DType dtype_of<std::int32_t>() { return DType::Int32; }
/// @endcond

}  // namespace gl
