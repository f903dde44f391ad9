/// @file
/// @brief The low-precision GEMM kernels (kernels/gemm_lowp.hpp): float16/bfloat16
/// operands, FP32 accumulation. Not a ladder of versions like the FP32 family
/// (kernels/cpu/sgemm/sgemm.hpp): each is a *path* for one instruction set, the best this
/// file knows for CPUs that have it, and the registry runs the most capable path the CPU
/// reports (best_lowp_gemm). Besides the paths, the oracle they are all tested against:
///
///   oracle        naive.cpp            triple loop, each element widened as it is read
///   portable      convert.cpp          widen both operands to FP32, then the FP32 GEMM;
///                                      every CPU (F16C speeds up the widening)
///   AVX512-FP16   fp16_avx512fp16.cpp  FP16 FMAs over short runs of K, widened into FP32
///                                      sums (float16; Sapphire Rapids and later)
///   AVX512-BF16   bf16_avx512.cpp      vdpbf16ps dot products of bf16 pairs into FP32
///                                      (bfloat16; Cooper Lake, Zen 4 and later)
///   AMX-BF16      bf16_amx.cpp         tdpbf16ps on 16 x 32 tiles (bfloat16; Sapphire
///                                      Rapids and later)
///
/// The three instruction-set paths pack their operands with pack.hpp (K in the pairs or
/// groups the instructions read). Tests: build/tests/unit_tests --gtest_filter='*Lowp*'
/// (paths the CPU lacks are skipped with a message).
#pragma once

#include <vector>

#include "kernels/gemm_lowp.hpp"

namespace gl::kernels {

/// @cond
// One function per file.
LowpGemmKernel gemm_lowp_naive_kernel();
LowpGemmKernel gemm_lowp_convert_kernel();
LowpGemmKernel gemm_fp16_avx512fp16_kernel();
LowpGemmKernel gemm_bf16_avx512_kernel();
LowpGemmKernel gemm_bf16_amx_kernel();
/// @endcond

/// The oracle, then the paths from the portable one to the most capable: what the
/// low-precision registry lists, whether or not this CPU can run them.
inline std::vector<LowpGemmKernel> cpu_lowp_gemm_paths() {
    return {gemm_lowp_naive_kernel(), gemm_lowp_convert_kernel(), gemm_fp16_avx512fp16_kernel(),
            gemm_bf16_avx512_kernel(), gemm_bf16_amx_kernel()};
}

}  // namespace gl::kernels
