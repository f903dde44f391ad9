/// @file
/// @brief The INT8 GEMM kernels (kernels/gemm_int8.hpp): u8 x s8 -> s32, optionally
/// requantized to u8 in the output. Like the 16-bit family (kernels/cpu/lowp/paths.hpp),
/// each is a *path* for one instruction set, and the registry runs the most capable one
/// the CPU reports; besides the paths, the oracle they are all tested against:
///
///   oracle        naive.cpp     triple loop, (a - za)(b - zb) summed in INT32
///   portable      portable.cpp  the packed loops of the paths below with a plain C++
///                               micro-kernel; every CPU
///   AVX512-VNNI   vnni.cpp      vpdpbusd: 64 u8 x s8 products summed in fours into 16
///                               INT32 lanes per instruction, 4x an FP32 FMA's work
///                               (Ice Lake, Zen 4 and later); a transposed 32 x 12 tile
///                 vnni_rows.cpp the same instruction on a row-major 6 x 64 tile, K up
///                               to 2048 summed in registers (oneDNN's layout)
///                 vnni_direct.cpp that tile with A broadcast in place from the caller's
///                               rows: only B is packed (what dispatch picks)
///   AMX-INT8      amx.cpp       tdpbusd on 16 x 64 by 64 x 16 tiles (Sapphire Rapids and
///                               later); compiled everywhere, run only where the CPU has AMX
///
/// All of them pack their operands with pack.hpp (K in groups of four, the "VNNI layout")
/// and share the epilogue there: zero-point compensation, then either INT32 out or the
/// fused requantization. Tests: build/tests/unit_tests --gtest_filter='Int8Gemm*'
/// (paths the CPU lacks are skipped with a message).
#pragma once

#include <vector>

#include "kernels/gemm_int8.hpp"

namespace gl::kernels {

/// @cond
// One function per file.
Int8GemmKernel gemm_int8_naive_kernel();
Int8GemmKernel gemm_int8_portable_kernel();
Int8GemmKernel gemm_int8_vnni_kernel();
Int8GemmKernel gemm_int8_vnni_rows_kernel();
Int8GemmKernel gemm_int8_vnni_direct_kernel();
Int8GemmKernel gemm_int8_amx_kernel();
/// @endcond

/// The oracle, then the paths from the portable one to the most capable.
inline std::vector<Int8GemmKernel> cpu_int8_gemm_paths() {
    // int8_vnni_direct last, so dispatch (the last path this CPU can run) picks it: with its
    // A broadcast straight from memory and full tiles summed into C, it runs the square
    // problems 1-2% faster than int8_vnni_rows and the MLP's and CNN's INT8 inference
    // 4-15% faster (bench_int8, docs/results/2026-12-04-late.md).
    return {gemm_int8_naive_kernel(),    gemm_int8_portable_kernel(),   gemm_int8_vnni_kernel(),
            gemm_int8_vnni_rows_kernel(), gemm_int8_vnni_direct_kernel(), gemm_int8_amx_kernel()};
}

}  // namespace gl::kernels
