/// @file
/// @brief CPU stand-ins for CUDA's built-in vector types: dim3, uint3, int2/int4, float2/float4.
///
/// Same layout and alignment as CUDA's (float4 is 16-byte aligned, so one float4 access is
/// one 16-byte access on both paths). They live in gl::cuda::cpu and are brought to the
/// global namespace, where CUDA code expects them; only translation units compiled without
/// nvcc include this file.
#pragma once

namespace gl::cuda::inline cpu {

/// Three unsigned coordinates: the type of threadIdx and blockIdx.
struct uint3 {
    unsigned x;  ///< fastest-changing coordinate (consecutive threads of a warp differ in x)
    unsigned y;  ///< second coordinate
    unsigned z;  ///< slowest-changing coordinate
};

/// A grid or block size; missing dimensions are 1, as in CUDA.
struct dim3 {
    unsigned x = 1;  ///< extent in x (threads of a warp are consecutive in x)
    unsigned y = 1;  ///< extent in y
    unsigned z = 1;  ///< extent in z
    /// `dim3(n)` is n x 1 x 1, `dim3(32, 32)` is 32 x 32 x 1: implicit, so `launch(k, 64, 256, ...)` works.
    constexpr dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
    /// From a uint3, e.g. `dim3 d = blockIdx;`.
    constexpr dim3(uint3 v) : x(v.x), y(v.y), z(v.z) {}
    /// To a uint3, as CUDA allows in both directions.
    constexpr operator uint3() const { return {x, y, z}; }
};

/// Two ints (8 bytes; CUDA aligns it to 8, but nothing here loads it as one access).
struct int2 {
    int x;  ///< first component
    int y;  ///< second component
};
/// Four ints, 16-byte aligned: one 16-byte load or store, like CUDA's.
struct alignas(16) int4 {
    int x;  ///< first component (lowest address)
    int y;  ///< second component
    int z;  ///< third component
    int w;  ///< fourth component
};
/// Two floats, 8-byte aligned: one 8-byte access.
struct alignas(8) float2 {
    float x;  ///< first component
    float y;  ///< second component
};
/// Four floats, 16-byte aligned: the vectorized SGEMM loads and stores these, one 16-byte
/// access instead of four 4-byte ones (a quarter of the requests).
struct alignas(16) float4 {
    float x;  ///< first component (lowest address)
    float y;  ///< second component
    float z;  ///< third component
    float w;  ///< fourth component
};

/// An int2 from its components, as CUDA's make_int2.
constexpr int2 make_int2(int x, int y) { return {x, y}; }
/// An int4 from its components, as CUDA's make_int4.
constexpr int4 make_int4(int x, int y, int z, int w) { return {x, y, z, w}; }
/// A float2 from its components, as CUDA's make_float2.
constexpr float2 make_float2(float x, float y) { return {x, y}; }
/// A float4 from its components, as CUDA's make_float4.
constexpr float4 make_float4(float x, float y, float z, float w) { return {x, y, z, w}; }

}  // namespace gl::cuda::cpu

using gl::cuda::cpu::dim3;
using gl::cuda::cpu::float2;
using gl::cuda::cpu::float4;
using gl::cuda::cpu::int2;
using gl::cuda::cpu::int4;
using gl::cuda::cpu::make_float2;
using gl::cuda::cpu::make_float4;
using gl::cuda::cpu::make_int2;
using gl::cuda::cpu::make_int4;
using gl::cuda::cpu::uint3;
