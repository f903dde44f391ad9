// Version 2 of the CPU GEMM family: the same arithmetic as the naive i-j-k loop, with the
// two inner loops swapped (i-k-j).
//
// Why it is faster: in i-j-k the innermost loop walks B down a column, one new cache line
// per multiply-add, and the loop-carried sum cannot be vectorized without reassociation.
// In i-k-j the innermost loop is C(i, :) += A(i, k) * B(k, :): it walks a row of B and a
// row of C contiguously, every cache line is used in full, and the compiler vectorizes it.
// When B is stored transposed (trans_b) its rows are op(B)'s columns, and the dot-product
// order i-j-k is already the contiguous one, so that case keeps it.
#include "base/error.hpp"
#include "kernels/cpu/sgemm/sgemm.hpp"

namespace gl::kernels {
namespace {

template <class T>
T a_at(const GemmArgs<T>& g, std::int64_t i, std::int64_t k) {
    return g.trans_a ? g.A[k * g.lda + i] : g.A[i * g.lda + k];
}

template <class T>
void gemm_reordered(const GemmArgs<T>& g) {
    // LAB 02 BEGIN: the reordered (i-k-j) loop
    // For each row i of C: clear it, then for each k add A(i, k) times row k of op(B).
    // With trans_b, op(B)'s row k is a column of the stored B: use dot products
    // (C(i, j) = sum_k A(i, k) * B[j * ldb + k]) so both operands are read contiguously.
    for (std::int64_t i = 0; i < g.M; ++i) {
        T* c = g.C + i * g.ldc;  // row i of C
        if (g.trans_b) {
            for (std::int64_t j = 0; j < g.N; ++j) {
                const T* b = g.B + j * g.ldb;  // column j of op(B), stored as a row
                T acc = 0;
                for (std::int64_t k = 0; k < g.K; ++k) acc += a_at(g, i, k) * b[k];
                c[j] = acc;
            }
            continue;
        }
        for (std::int64_t j = 0; j < g.N; ++j) c[j] = 0;
        for (std::int64_t k = 0; k < g.K; ++k) {
            const T a = a_at(g, i, k);
            const T* b = g.B + k * g.ldb;  // row k of B
            for (std::int64_t j = 0; j < g.N; ++j) c[j] += a * b[j];
        }
    }
    // LAB 02 END
}

}  // namespace

GemmKernel gemm_reordered_kernel() {
    return {"reordered", "i-k-j loop order: the inner loop streams rows of B and C", &gemm_reordered<float>,
            &gemm_reordered<double>};
}

}  // namespace gl::kernels
