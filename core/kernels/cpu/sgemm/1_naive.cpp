// Version 1 of the CPU GEMM family: the textbook triple loop, i-j-k order.
// One dot product per output element. It is obviously right, so every other kernel is
// tested against it, and it is slow because the inner loop walks B down a column
// (a new cache line per step when B is not transposed).
#include "kernels/cpu/sgemm/sgemm.hpp"

namespace gl::kernels {
namespace {

template <class T>
T element(const T* X, std::int64_t ld, bool trans, std::int64_t row, std::int64_t col) {
    return trans ? X[col * ld + row] : X[row * ld + col];
}

template <class T>
void gemm_naive(const GemmArgs<T>& g) {
    for (std::int64_t i = 0; i < g.M; ++i)
        for (std::int64_t j = 0; j < g.N; ++j) {
            T acc = 0;
            for (std::int64_t k = 0; k < g.K; ++k)
                acc += element(g.A, g.lda, g.trans_a, i, k) * element(g.B, g.ldb, g.trans_b, k, j);
            g.C[i * g.ldc + j] = acc;
        }
}

}  // namespace

GemmKernel gemm_naive_kernel() {
    return {"naive", "i-j-k triple loop, one dot product per output", &gemm_naive<float>,
            &gemm_naive<double>};
}

}  // namespace gl::kernels
