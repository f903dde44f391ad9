// OpenBLAS as a GEMM peer (cblas_sgemm / cblas_dgemm): a Goto-style library tuned by
// hand in assembly per CPU family, so the teaching kernels can be measured against it in
// the same run. Registered only when the build found OpenBLAS (libopenblas-dev).
#include "kernels/cpu/peers/peers.hpp"

#if GRADLAB_HAVE_OPENBLAS
#include <cblas.h>

#include "parallel/thread_pool.hpp"
#endif

namespace gl::kernels {

#if GRADLAB_HAVE_OPENBLAS
namespace {

// OpenBLAS keeps its own thread pool; tell it the thread count gl::set_num_threads chose.
void sync_threads() {
    thread_local int last = -1;
    const int n = get_num_threads();
    if (n != last) openblas_set_num_threads(n);
    last = n;
}

CBLAS_TRANSPOSE op(bool trans) { return trans ? CblasTrans : CblasNoTrans; }

void sgemm_openblas(const GemmArgs<float>& g) {
    const UnpinnedScope unpinned;  // threads OpenBLAS starts must not inherit our pinned caller's one CPU
    sync_threads();
    cblas_sgemm(CblasRowMajor, op(g.trans_a), op(g.trans_b), static_cast<blasint>(g.M),
                static_cast<blasint>(g.N), static_cast<blasint>(g.K), 1.0f, g.A, static_cast<blasint>(g.lda), g.B,
                static_cast<blasint>(g.ldb), 0.0f, g.C, static_cast<blasint>(g.ldc));
}

void dgemm_openblas(const GemmArgs<double>& g) {
    const UnpinnedScope unpinned;
    sync_threads();
    cblas_dgemm(CblasRowMajor, op(g.trans_a), op(g.trans_b), static_cast<blasint>(g.M),
                static_cast<blasint>(g.N), static_cast<blasint>(g.K), 1.0, g.A, static_cast<blasint>(g.lda), g.B,
                static_cast<blasint>(g.ldb), 0.0, g.C, static_cast<blasint>(g.ldc));
}

}  // namespace

std::optional<GemmKernel> gemm_openblas_kernel() {
    return GemmKernel{"openblas", "OpenBLAS cblas_sgemm (peer library, its " + openblas_core() + " kernels)",
                      &sgemm_openblas, &dgemm_openblas};
}

std::string openblas_core() { return openblas_get_corename(); }
#else
std::optional<GemmKernel> gemm_openblas_kernel() { return std::nullopt; }
std::string openblas_core() { return ""; }
#endif

}  // namespace gl::kernels
