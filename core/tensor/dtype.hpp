/// @file
/// @brief Element types a tensor can hold and the devices it can live on.
///
/// Owns: the names and sizes of element types and devices. Arithmetic on low-precision
/// types lives in numerics/, not here.
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
/// the other ops ask for float32 (see amp/autocast.hpp). Int8 is for quantization, Int32
/// holds labels and indices.
enum class DType : std::uint8_t { Float32, Float64, Float16, BFloat16, Int8, Int32 };

/// Bytes one element of @p dtype occupies.
std::size_t size_of(DType dtype);
/// The conventional short name ("float32", "float16", ...).
std::string name_of(DType dtype);
/// True for the types gradients can flow through (Float32, Float64, Float16, BFloat16).
bool is_differentiable(DType dtype);

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

/// Where a tensor's storage lives.
enum class DeviceKind : std::uint8_t { CPU, CUDA };

/// A device: a kind and, for CUDA, the device ordinal.
struct Device {
    DeviceKind kind = DeviceKind::CPU;  ///< CPU or CUDA
    int index = 0;                      ///< CUDA ordinal; 0 for the CPU
    /// Devices compare equal when kind and index match.
    bool operator==(const Device&) const = default;
    /// "cpu" or "cuda:N".
    std::string str() const;
};

/// Calls `fn.template operator()<T>()` with T = float or double according to @p dtype,
/// and throws a clear error for the other types. Ops use it to write one templated body.
template <class Fn>
decltype(auto) dispatch_floating(DType dtype, const char* op, Fn&& fn);

}  // namespace gl

#include "tensor/dtype_dispatch.hpp"
