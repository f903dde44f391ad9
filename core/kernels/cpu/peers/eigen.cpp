// Eigen as a GEMM peer: an established, well-tuned library behind the same interface,
// so the teaching kernels can be compared with it and tested against it.
#include <Eigen/Core>

#include "kernels/cpu/peers/peers.hpp"

namespace gl::kernels {
namespace {

template <class T>
using RowMajor = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <class T>
using ConstMap = Eigen::Map<const RowMajor<T>, 0, Eigen::OuterStride<>>;
template <class T>
using Map = Eigen::Map<RowMajor<T>, 0, Eigen::OuterStride<>>;

template <class T>
void gemm_eigen(const GemmArgs<T>& g) {
    // Map each operand as it is stored; a transposed operand is stored as K x M (or N x K).
    const ConstMap<T> A(g.A, g.trans_a ? g.K : g.M, g.trans_a ? g.M : g.K, Eigen::OuterStride<>(g.lda));
    const ConstMap<T> B(g.B, g.trans_b ? g.N : g.K, g.trans_b ? g.K : g.N, Eigen::OuterStride<>(g.ldb));
    Map<T> C(g.C, g.M, g.N, Eigen::OuterStride<>(g.ldc));
    if (g.trans_a && g.trans_b)
        C.noalias() = A.transpose() * B.transpose();
    else if (g.trans_a)
        C.noalias() = A.transpose() * B;
    else if (g.trans_b)
        C.noalias() = A * B.transpose();
    else
        C.noalias() = A * B;
}

}  // namespace

GemmKernel gemm_eigen_kernel() {
    return {"eigen", "Eigen 3 (peer library)", &gemm_eigen<float>, &gemm_eigen<double>};
}

}  // namespace gl::kernels
