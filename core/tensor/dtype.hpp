/// @file
/// @brief Element types a tensor can hold and the devices it can live on.
///
/// Owns: which element types carry gradients, devices, and the dispatch from a DType to
/// a C++ type. The element types themselves (DType, size_of, name_of) are numerics/
/// dtype.hpp; arithmetic on low-precision types lives in numerics/, not here.
#pragma once

#include <string>

#include "numerics/dtype.hpp"

namespace gl {

/// True for the types gradients can flow through (Float32, Float64, Float16, BFloat16).
bool is_differentiable(DType dtype);

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
