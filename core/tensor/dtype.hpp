/// @file
/// @brief Element types a tensor can hold and the devices it can live on.
///
/// Owns: the names and sizes of element types and devices. Arithmetic on low-precision
/// types lives in numerics/, not here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace gl {

/// The element type of a tensor. Float32 and Float64 have full op support; the others
/// are storage types that later labs compute with (Float16, BFloat16, Int8) or hold
/// labels and indices (Int32).
enum class DType : std::uint8_t { Float32, Float64, Float16, BFloat16, Int8, Int32 };

/// Bytes one element of @p dtype occupies.
std::size_t size_of(DType dtype);
/// The conventional short name ("float32", "float16", ...).
std::string name_of(DType dtype);
/// True for the types gradients can flow through (Float32, Float64).
bool is_differentiable(DType dtype);

/// Maps a C++ element type to its DType, e.g. dtype_of<float>() == DType::Float32.
template <class T>
constexpr DType dtype_of();
/// @cond
template <> constexpr DType dtype_of<float>() { return DType::Float32; }
template <> constexpr DType dtype_of<double>() { return DType::Float64; }
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
