/// @file
/// @brief Established GEMM libraries behind the registry's interface (kernels/gemm.hpp),
/// as peers of the CPU FP32 family (kernels/cpu/sgemm/sgemm.hpp): benchmarks put them in
/// the same table, tests use them as oracles. None of them is one of our versions, and
/// none is hidden behind one.
///
///   eigen.cpp     Eigen 3: header-only C++ templates, always built
///   openblas.cpp  OpenBLAS cblas_sgemm: Goto's algorithm with micro-kernels hand-written
///                 in assembly per CPU family (built when libopenblas-dev is found)
///   onednn.cpp    oneDNN dnnl_sgemm: GEMM code generated at run time (JIT) for the exact
///                 CPU (built when libdnnl-dev is found)
///
/// The libraries keep thread pools of their own; each peer sets its pool to
/// gl::get_num_threads() before a call, so a comparison is at equal thread counts.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "kernels/gemm.hpp"
#include "kernels/gemm_int8.hpp"

namespace gl::kernels {

/// @cond
// One function per peer's file; nullopt when the build did not find the library.
GemmKernel gemm_eigen_kernel();
std::optional<GemmKernel> gemm_openblas_kernel();
/// The kernels OpenBLAS chose when it was loaded ("Cooperlake", "Haswell", ...; from
/// OPENBLAS_CORETYPE where that is set, tools/peers/openblas_core.py says why it matters),
/// or "" in a build without OpenBLAS.
std::string openblas_core();
std::optional<GemmKernel> gemm_onednn_kernel();
// oneDNN's INT8 GEMM (dnnl_gemm_u8s8s32), the peer of the INT8 family (kernels/gemm_int8.hpp).
std::optional<Int8GemmKernel> gemm_int8_onednn_kernel();
// oneDNN's matmul primitive on u8 x s8 -> s32 (brgemm kernels on a VNNI CPU), a second INT8 peer.
std::optional<Int8GemmKernel> gemm_int8_onednn_matmul_kernel();
/// @endcond

/// The peer libraries this build found, in the order above: what the GEMM registry lists
/// after our versions.
inline std::vector<GemmKernel> cpu_gemm_peers() {
    std::vector<GemmKernel> peers{gemm_eigen_kernel()};
    for (const auto& peer : {gemm_openblas_kernel(), gemm_onednn_kernel()})
        if (peer) peers.push_back(*peer);
    return peers;
}

}  // namespace gl::kernels
