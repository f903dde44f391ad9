// Low-precision GEMM, the portable path: convert, then FP32 GEMM. Widen both operands to
// float32 (F16C's vcvtph2ps where the CPU has it, a shift for bfloat16), then run the
// fastest FP32 kernel. It costs O(MK + KN) conversions on top of the O(MNK) FP32 work, so
// it is never faster than FP32: 16-bit *storage* saves memory and bandwidth, not
// arithmetic. Every CPU can run it.
#include <vector>

#include "kernels/cpu/lowp/paths.hpp"
#include "kernels/gemm.hpp"
#include "numerics/convert.hpp"

namespace gl::kernels {
namespace {

// The stored matrix (rows x ld, of which `cols` are used) widened to float.
std::vector<float> widen(DType dtype, const std::uint16_t* x, std::int64_t rows, std::int64_t cols, std::int64_t ld) {
    std::vector<float> out(static_cast<std::size_t>(rows * cols));
    for (std::int64_t r = 0; r < rows; ++r)
        numerics::to_float(dtype, x + r * ld, out.data() + r * cols, static_cast<std::size_t>(cols));
    return out;
}

void gemm_lowp_convert(const LowpGemmArgs& g) {
    // A is stored as M x K (or K x M when transposed); likewise B.
    const std::int64_t a_rows = g.trans_a ? g.K : g.M, a_cols = g.trans_a ? g.M : g.K;
    const std::int64_t b_rows = g.trans_b ? g.N : g.K, b_cols = g.trans_b ? g.K : g.N;
    const std::vector<float> A = widen(g.dtype, g.A, a_rows, a_cols, g.lda);
    const std::vector<float> B = widen(g.dtype, g.B, b_rows, b_cols, g.ldb);
    GemmArgs<float> f = dense_gemm_args(g.trans_a, g.trans_b, g.M, g.N, g.K, A.data(), B.data(), g.C);
    f.ldc = g.ldc;  // C is the caller's, with the caller's row stride
    gemm(f);
}

}  // namespace

LowpGemmKernel gemm_lowp_convert_kernel() {
    return {"lowp_convert", "widen operands to FP32 (F16C where present), then the default FP32 GEMM", true, true, "",
            [] { return true; }, &gemm_lowp_convert};
}

}  // namespace gl::kernels
