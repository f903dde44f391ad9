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
    unsigned x, y, z;
};

/// A grid or block size; missing dimensions are 1, as in CUDA.
struct dim3 {
    unsigned x = 1, y = 1, z = 1;
    constexpr dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
    constexpr dim3(uint3 v) : x(v.x), y(v.y), z(v.z) {}
    constexpr operator uint3() const { return {x, y, z}; }
};

struct int2 { int x, y; };
struct alignas(16) int4 { int x, y, z, w; };
struct alignas(8) float2 { float x, y; };
struct alignas(16) float4 { float x, y, z, w; };

constexpr int2 make_int2(int x, int y) { return {x, y}; }
constexpr int4 make_int4(int x, int y, int z, int w) { return {x, y, z, w}; }
constexpr float2 make_float2(float x, float y) { return {x, y}; }
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
