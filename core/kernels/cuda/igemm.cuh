/// @file
/// @brief What the CPU-runtime and the GPU builds of the INT8 GEMMs share: each kernel's
/// tile, padding a problem to it, and the launch.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/error.hpp"
#include "kernels/cuda/igemm.hpp"
#include "kernels/cuda/igemm_dp4a.cuh"
#include "kernels/cuda/igemm_wmma.cuh"
#include "kernels/cuda/padded.hpp"

namespace gl::kernels::cuda {
namespace {  // internal: g++ (CPU runtime) and nvcc (GPU) each compile their own copy

/// The multiples a kernel needs M, N and K to be.
struct IgemmTile {
    int m, n, k;
};

/// dp4a: whole 32-bit words of K; wmma: whole 16 x 16 x 16 tiles.
inline IgemmTile igemm_tile(CudaIgemm kernel) {
    return kernel == CudaIgemm::dp4a ? IgemmTile{1, 1, 4} : IgemmTile{16, 16, 16};
}

/// A problem padded with zeros to a kernel's tile (zeros add nothing to the sums), with room
/// for the padded result.
struct PaddedIgemm {
    int M, N, K;                     ///< the padded sizes
    std::vector<std::int8_t> a, b;   ///< A (M x K) and B (N x K), padded
    std::vector<std::int32_t> c;     ///< C (M x N), padded
};

inline PaddedIgemm pad_igemm(CudaIgemm kernel, int M, int N, int K, const std::int8_t* A, const std::int8_t* B) {
    check(M >= 0 && N >= 0 && K >= 0, "cuda_igemm: M, N and K must not be negative (got " + std::to_string(M) +
                                          ", " + std::to_string(N) + ", " + std::to_string(K) + ")");
    const IgemmTile t = igemm_tile(kernel);
    PaddedIgemm p{round_up(M, t.m), round_up(N, t.n), round_up(K, t.k), {}, {}, {}};
    p.a = padded(A, M, K, p.M, p.K);
    p.b = padded(B, N, K, p.N, p.K);
    p.c.assign(std::size_t(p.M) * p.N, 0);
    return p;
}

/// Launches @p kernel on memory of the runtime it is compiled for; sizes already padded.
inline void launch_igemm(CudaIgemm kernel, int M, int N, int K, const std::int8_t* A, const std::int8_t* B,
                         std::int32_t* C) {
    const IgemmTile t = igemm_tile(kernel);
    // Built only on failure: the benchmarks call this once per timed launch.
    check(M % t.m == 0 && N % t.n == 0 && K % t.k == 0, [&] {
        return std::string("cuda_igemm: ") + name_of(kernel) + " needs M, N, K multiples of " + std::to_string(t.m) +
               ", " + std::to_string(t.n) + ", " + std::to_string(t.k) + " (the host entries pad)";
    });
    if (M == 0 || N == 0) return;
    if (kernel == CudaIgemm::dp4a) {
        const dim3 block(kDp4aTile, kDp4aTile);
        const dim3 grid((N + kDp4aTile - 1) / kDp4aTile, (M + kDp4aTile - 1) / kDp4aTile);
        gl::cuda::launch(igemm_dp4a, grid, block, 0, M, N, K, A, B, C);
    } else {
        const dim3 block(32, 4);  // four warps, stacked in y: 64 rows of C per block
        const dim3 grid(N / 16, (M / 16 + 3) / 4);
        gl::cuda::launch(igemm_wmma, grid, block, 0, M, N, K, A, B, C);
    }
}

}  // namespace
}  // namespace gl::kernels::cuda
