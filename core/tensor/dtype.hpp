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
enum class DeviceKind : std::uint8_t {
    CPU,      ///< host memory, CPU kernels (kernels/cpu/)
    CUDA,     ///< a GPU's memory, the CUDA kernels compiled by nvcc
    CudaCpu,  ///< the CUDA-on-CPU runtime's "device" memory, the same CUDA kernels run there
};

/// A device: a kind and, for CUDA, the device ordinal (like torch.device).
struct Device {
    DeviceKind kind = DeviceKind::CPU;  ///< CPU, CUDA or the CPU runtime
    int index = 0;                      ///< CUDA ordinal; 0 otherwise
    /// Devices compare equal when kind and index match.
    bool operator==(const Device&) const = default;
    /// True for host memory (CPU kernels); false for both CUDA runtimes.
    bool is_cpu() const { return kind == DeviceKind::CPU; }
    /// "cpu", "cuda:N" or "cuda_cpu".
    std::string str() const;
};

/// The CPU.
inline constexpr Device kCpu{DeviceKind::CPU, 0};
/// The CUDA kernels on the CPU runtime (named like the GEMM registry's "cuda_cpu" kernel).
inline constexpr Device kCudaCpu{DeviceKind::CudaCpu, 0};

/// "cpu", "cuda" (= "cuda:0"), "cuda:N" or "cuda_cpu" as a Device; throws gl::Error
/// naming the choices for anything else. Says nothing about whether the device is present.
Device parse_device(const std::string& name);

/// Calls `fn.template operator()<T>()` with T = float or double according to @p dtype,
/// and throws a clear error for the other types. Ops use it to write one templated body.
template <class Fn>
decltype(auto) dispatch_floating(DType dtype, const char* op, Fn&& fn);

}  // namespace gl

#include "tensor/dtype_dispatch.hpp"
