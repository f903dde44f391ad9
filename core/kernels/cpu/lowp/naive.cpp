// Low-precision GEMM, the oracle: the i-j-k triple loop of sgemm/1_naive.cpp, with
// each 16-bit element widened to float as it is read and the dot product accumulated in
// FP32. Every other low-precision kernel is tested against it.
#include "kernels/cpu/lowp/pack.hpp"
#include "kernels/cpu/lowp/paths.hpp"
#include "numerics/bfloat16.hpp"
#include "numerics/half.hpp"

namespace gl::kernels {
namespace {

float widen(DType dtype, std::uint16_t bits) {
    return dtype == DType::Float16 ? half_bits_to_float(bits) : bfloat16_bits_to_float(bits);
}

void gemm_lowp_naive(const LowpGemmArgs& g) {
    for (std::int64_t i = 0; i < g.M; ++i)
        for (std::int64_t j = 0; j < g.N; ++j) {
            float acc = 0.0f;
            for (std::int64_t k = 0; k < g.K; ++k)
                acc += widen(g.dtype, lowp::element(g.A, g.lda, g.trans_a, i, k)) *
                       widen(g.dtype, lowp::element(g.B, g.ldb, g.trans_b, k, j));
            g.C[i * g.ldc + j] = acc;
        }
}

}  // namespace

LowpGemmKernel gemm_lowp_naive_kernel() {
    return {"lowp_naive", "triple loop, widen each element to FP32, FP32 accumulation", true, true, "",
            [] { return true; }, &gemm_lowp_naive};
}

}  // namespace gl::kernels
