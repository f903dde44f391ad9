/// @file
/// @brief Low-precision GEMM: float16/bfloat16 operands, FP32 accumulation and result.
///
/// Owns: the calling convention of the 16-bit GEMM kernels and their table, which lists
/// the paths of kernels/cpu/lowp/paths.hpp in order. Each kernel says which element types
/// it takes and whether this CPU can run it, so callers dispatch at run time: the
/// AVX512-BF16 dot-product path, the AVX512-FP16 path and the AMX-BF16 tile path are used
/// only where the CPU reports the feature; the portable convert-then-FP32 path and the
/// naive oracle run everywhere.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tensor/dtype.hpp"

namespace gl::kernels {

/// One low-precision GEMM: C[M x N] = op(A) op(B) with A and B 16-bit floats of
/// @ref dtype, accumulated and stored in FP32 (C is overwritten). Layout as GemmArgs:
/// row-major, op(X) = X or X^T, element (i, k) of op(A) is A[i * lda + k] (or
/// A[k * lda + i] when trans_a).
struct LowpGemmArgs {
    DType dtype = DType::BFloat16;  ///< Float16 or BFloat16 (both operands)
    bool trans_a = false;           ///< read A transposed
    bool trans_b = false;           ///< read B transposed
    std::int64_t M = 0;             ///< rows of C
    std::int64_t N = 0;             ///< columns of C
    std::int64_t K = 0;             ///< the summed dimension
    const std::uint16_t* A = nullptr;  ///< left operand (bit patterns)
    std::int64_t lda = 0;           ///< row stride of A as stored
    const std::uint16_t* B = nullptr;  ///< right operand (bit patterns)
    std::int64_t ldb = 0;           ///< row stride of B as stored
    float* C = nullptr;             ///< FP32 result (overwritten)
    std::int64_t ldc = 0;           ///< row stride of C
};

/// Signature of a low-precision GEMM kernel.
using LowpGemmFn = void (*)(const LowpGemmArgs&);

/// A named low-precision kernel.
struct LowpGemmKernel {
    std::string name;          ///< registry key, e.g. "lowp_convert", "bf16_avx512"
    std::string idea;          ///< one line: what the kernel does
    bool float16 = false;      ///< takes Float16 operands
    bool bfloat16 = false;     ///< takes BFloat16 operands
    std::string needs;         ///< CPU features it needs ("" for none), for reports
    bool (*available)() = nullptr;  ///< whether this CPU can run it
    LowpGemmFn fn = nullptr;   ///< the kernel
    /// True when the kernel takes @p dtype.
    bool supports(DType dtype) const { return dtype == DType::Float16 ? float16 : dtype == DType::BFloat16 && bfloat16; }
};

/// All low-precision kernels, slowest idea first, whether or not this CPU can run them.
const std::vector<LowpGemmKernel>& lowp_gemm_kernels();
/// The kernel called @p name; throws gl::Error listing the names otherwise.
const LowpGemmKernel& find_lowp_gemm(const std::string& name);
/// The kernel lowp_gemm() uses for @p dtype: the last registered one that takes it and
/// that this CPU can run (AMX-BF16 or AVX512-BF16 for bfloat16, AVX512-FP16 or
/// convert-then-FP32 for float16).
const LowpGemmKernel& best_lowp_gemm(DType dtype);
/// Runs @p args through best_lowp_gemm(args.dtype).
void lowp_gemm(const LowpGemmArgs& args);
/// Runs @p args through @p kernel after checking that it takes the dtype and can run here.
void run_lowp_gemm(const LowpGemmKernel& kernel, const LowpGemmArgs& args);

}  // namespace gl::kernels
