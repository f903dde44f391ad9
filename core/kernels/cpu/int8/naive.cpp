// INT8 GEMM, the oracle: three loops, (a - za)(b - zb) summed in INT32, obviously right.
// The requantization, when asked for, goes through the same epilogue as the fast paths
// would not: it is written out here so the oracle shares no code with them.
#include "kernels/cpu/int8/paths.hpp"

namespace gl::kernels {
namespace {

std::int32_t dot(const Int8GemmArgs& g, std::int64_t i, std::int64_t j) {
    std::int32_t acc = 0;
    for (std::int64_t k = 0; k < g.K; ++k) {
        const std::int32_t a = g.A[i * g.lda + k] - g.a_zero_point;
        const std::int32_t b = (g.trans_b ? g.B[j * g.ldb + k] : g.B[k * g.ldb + j]) - g.b_zero_point;
        acc += a * b;
    }
    return acc;
}

void gemm_int8_naive(const Int8GemmArgs& g) {
    for (std::int64_t i = 0; i < g.M; ++i)
        for (std::int64_t j = 0; j < g.N; ++j) {
            std::int32_t acc = dot(g, i, j);
            const Int8Requant* rq = g.requant;
            if (!rq) {
                g.C[i * g.ldc + j] = acc;
                continue;
            }
            if (rq->bias) acc += rq->bias[j];
            const quant::FixedPointMultiplier m = rq->multipliers[rq->per_column ? j : 0];
            rq->out[i * rq->ldo + j] = static_cast<std::uint8_t>(quant::requantize(acc, m, rq->zero_point, rq->range));
        }
}

bool always() { return true; }

}  // namespace

Int8GemmKernel gemm_int8_naive_kernel() {
    return {"int8_naive", "triple loop, (a - za)(b - zb) summed in INT32 (the oracle)", "", &always, &gemm_int8_naive};
}

}  // namespace gl::kernels
