// Version 3 of the CPU GEMM family: the i-k-j loop of version 2, cache-blocked.
//
// Why: in version 2, for each row of C the whole of B streams through the cache. Once B
// is larger than the cache, every row of C reloads all of B from memory. Blocking splits
// the loops so that a KB x NB block of B (here 128 x 256 floats, 128 KiB, in L2) is reused
// by MB rows of A before moving on, and a row segment of C (NB floats) stays in L1 while
// KB multiply-adds accumulate into it. Same arithmetic, same order within each block.
#include <algorithm>
#include <vector>

#include "base/error.hpp"
#include "kernels/cpu/sgemm/sgemm.hpp"

namespace gl::kernels {
namespace {

constexpr std::int64_t MB = 64, KB = 128, NB = 256;

template <class T>
T a_at(const GemmArgs<T>& g, std::int64_t i, std::int64_t k) {
    return g.trans_a ? g.A[k * g.lda + i] : g.A[i * g.lda + k];
}

template <class T>
T b_at(const GemmArgs<T>& g, std::int64_t k, std::int64_t j) {
    return g.trans_b ? g.B[j * g.ldb + k] : g.B[k * g.ldb + j];
}

template <class T>
void gemm_blocked(const GemmArgs<T>& g) {
    for (std::int64_t i = 0; i < g.M; ++i) std::fill(g.C + i * g.ldc, g.C + i * g.ldc + g.N, T(0));
    // LAB 02 BEGIN: cache blocking of the i-k-j loop
    // Loop over blocks (j0 of NB columns, k0 of KB depth, i0 of MB rows), and inside
    // each block run the i-k-j loop of version 2 on it, adding into C (cleared above).
    // With trans_b, copy the KB x NB block of op(B) into a row-major scratch block first
    // so the inner loop still streams contiguous memory.
    std::vector<T> scratch(static_cast<std::size_t>(KB * NB));
    for (std::int64_t j0 = 0; j0 < g.N; j0 += NB) {
        const std::int64_t nb = std::min(NB, g.N - j0);
        for (std::int64_t k0 = 0; k0 < g.K; k0 += KB) {
            const std::int64_t kb = std::min(KB, g.K - k0);
            const T* block = g.B + k0 * g.ldb + j0;  // B(k0, j0) when B is row-major
            std::int64_t ld = g.ldb;
            if (g.trans_b) {
                for (std::int64_t k = 0; k < kb; ++k)
                    for (std::int64_t j = 0; j < nb; ++j) scratch[k * NB + j] = b_at(g, k0 + k, j0 + j);
                block = scratch.data();
                ld = NB;
            }
            for (std::int64_t i0 = 0; i0 < g.M; i0 += MB) {
                const std::int64_t ib = std::min(MB, g.M - i0);
                for (std::int64_t i = i0; i < i0 + ib; ++i) {
                    T* c = g.C + i * g.ldc + j0;  // row i, column j0
                    for (std::int64_t k = 0; k < kb; ++k) {
                        const T a = a_at(g, i, k0 + k);
                        const T* b = block + k * ld;
                        for (std::int64_t j = 0; j < nb; ++j) c[j] += a * b[j];
                    }
                }
            }
        }
    }
    // LAB 02 END
}

}  // namespace

GemmKernel gemm_blocked_kernel() {
    return {"blocked", "cache blocking of the i-k-j loop (blocks of B reused from L2)", &gemm_blocked<float>,
            &gemm_blocked<double>};
}

}  // namespace gl::kernels
