/// @file
/// @brief INT8 GEMM (claim Q-1): UINT8 activations times INT8 weights, INT32 accumulation,
/// and optionally requantization to UINT8 fused into the output.
///
/// Owns: the calling convention of the INT8 kernels (kernels/cpu/int8/paths.hpp) and
/// their table, with run-time dispatch to the most capable path this CPU reports (AMX-INT8,
/// AVX512-VNNI, portable). u8 x s8 is the pairing the hardware multiplies
/// (vpdpbusd, tdpbusd): activations after a ReLU are non-negative, so UINT8 with a zero
/// point; weights are centred on 0, so INT8 symmetric.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/aligned_vector.hpp"

#include "numerics/quantize.hpp"

namespace gl::kernels {

/// Requantization fused into an INT8 GEMM's output: instead of INT32 C, write
/// out(i, j) = requantize(acc(i, j) + bias[j], multipliers[j or 0], zero_point, range),
/// with acc the zero-point-compensated accumulator. A ReLU is fused for free by a range
/// whose qmin is the zero point.
struct Int8Requant {
    const std::int32_t* bias = nullptr;  ///< [N] in accumulator units (in_scale * w_scale), or null
    const quant::FixedPointMultiplier* multipliers = nullptr;  ///< 1 (per tensor) or N (per column)
    bool per_column = false;              ///< multipliers has N entries
    std::int32_t zero_point = 0;          ///< the output's zero point
    quant::QRange range = quant::kUint8;  ///< the output's range (qmin = zero_point: ReLU)
    std::uint8_t* out = nullptr;          ///< M x N UINT8 output
    std::int64_t ldo = 0;                 ///< row stride of out
};

/// op(B) packed once, for the micro-tile of one kernel (pack_int8_weights), so that a
/// layer whose weights do not change packs them when it is built instead of in every
/// call: K in groups of four beside each other ("VNNI layout"), in slivers of `width`
/// columns, plus each column's sum (for the zero point of A).
struct Int8PackedB {
    std::int64_t N = 0;                     ///< columns of op(B)
    std::int64_t K = 0;                     ///< rows of op(B)
    std::int64_t width = 0;                 ///< columns per sliver (the kernel's micro-tile width)
    std::int64_t kp = 0;                    ///< K padded to the kernel's multiple
    /// [slivers][kp / 4][width][4], zero past the edges; on cache lines, so a micro-kernel's
    /// 64-byte loads of a sliver never straddle two
    AlignedVector<std::int8_t> data;
    std::vector<std::int32_t> column_sums;  ///< sum over K of each column
};

/// One INT8 GEMM: acc(i, j) = sum_k (A(i, k) - a_zero_point) (op(B)(k, j) - b_zero_point).
/// A is M x K UINT8, row-major (row stride lda); op(B) is K x N INT8: B[k * ldb + j], or
/// B[j * ldb + k] when trans_b (a Linear weight [out, in] is op(B) with trans_b). Without
/// @ref requant, acc is written to the INT32 C; with it, to requant->out.
struct Int8GemmArgs {
    std::int64_t M = 0;                  ///< rows of the result
    std::int64_t N = 0;                  ///< columns of the result
    std::int64_t K = 0;                  ///< the summed dimension
    const std::uint8_t* A = nullptr;     ///< UINT8 left operand
    std::int64_t lda = 0;                ///< row stride of A
    std::int32_t a_zero_point = 0;       ///< subtracted from every element of A
    const std::int8_t* B = nullptr;      ///< INT8 right operand
    std::int64_t ldb = 0;                ///< row stride of B as stored
    bool trans_b = false;                ///< B stored [N, K]
    std::int32_t b_zero_point = 0;       ///< subtracted from every element of op(B)
    std::int32_t* C = nullptr;           ///< INT32 result (when requant is null)
    std::int64_t ldc = 0;                ///< row stride of C
    const Int8Requant* requant = nullptr;  ///< fused requantization, or null
    /// op(B) already packed by pack_int8_weights for the kernel that runs, or null (the
    /// kernel packs B itself). Kernels that do not pack (the oracle, oneDNN) read B, so B
    /// is always given.
    const Int8PackedB* packed_b = nullptr;
};

/// Signature of an INT8 GEMM kernel.
using Int8GemmFn = void (*)(const Int8GemmArgs&);

/// A named INT8 kernel.
struct Int8GemmKernel {
    std::string name;               ///< registry key: "int8_naive", "int8_vnni", ...
    std::string idea;               ///< one line: what the kernel does
    std::string needs;              ///< CPU features it needs ("" for none), for reports
    bool (*available)() = nullptr;  ///< whether this CPU can run it
    Int8GemmFn fn = nullptr;        ///< the kernel
    bool peer = false;              ///< an established library (never chosen by dispatch)
    std::int64_t pack_width = 0;    ///< columns per packed B sliver; 0: the kernel does not pack B
    std::int64_t pack_k_align = 0;  ///< K is padded to a multiple of this in the packing
};

/// Our INT8 kernels (the oracle, then portable to most capable), then the peer libraries
/// this build found (oneDNN), whether or not this CPU can run them.
const std::vector<Int8GemmKernel>& int8_gemm_kernels();
/// The kernel called @p name; throws gl::Error listing the names otherwise.
const Int8GemmKernel& find_int8_gemm(const std::string& name);
/// The kernel int8_gemm() uses: the last of ours that this CPU can run.
const Int8GemmKernel& best_int8_gemm();
/// Runs @p args through best_int8_gemm().
void int8_gemm(const Int8GemmArgs& args);
/// op(B) of @p args (its B, ldb, trans_b, N, K and b_zero_point) packed for @p kernel's
/// micro-tile, to pass as Int8GemmArgs::packed_b to every later call of that kernel with
/// the same B; empty (width 0) for a kernel that does not pack.
Int8PackedB pack_int8_weights(const Int8GemmKernel& kernel, const Int8GemmArgs& args);
/// Runs @p args through @p kernel after checking that it can run here.
void run_int8_gemm(const Int8GemmKernel& kernel, const Int8GemmArgs& args);

}  // namespace gl::kernels
