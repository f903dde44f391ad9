/// @file
/// @brief Version 2 of the CUDA convolution family: implicit GEMM.
///
/// Each pass of a convolution is, per group, one matrix product (the CPU im2col version,
/// kernels/cpu/conv/2_im2col.cpp, writes it out):
///
///   pass             C (rows x cols)           A (rows x depth)       B (depth x cols)
///   forward          y   [k, (n, p, q)]        w  [k, (c, r, s)]      columns [(c, r, s), (n, p, q)] of x
///   backward_data    dx  [c, (n, h, w)]        w^T [c, (k, r, s)]     dy gathered [(k, r, s), (n, h, w)]
///   backward_weight  dw  [k, (c, r, s)]        dy [k, (n, p, q)]      columns^T [(n, p, q), (c, r, s)] of x
///
/// The kernel is the shared-memory tiled GEMM of the SGEMM family (sgemm_3_smem_tiled.cuh):
/// a block computes a kTile x kTile tile of C, walking the depth kTile at a time; each step
/// every thread copies one element of the A tile and one of the B tile into shared memory,
/// and then every thread does kTile multiply-adds from shared memory. What is new is where
/// the tiles come from: element (row, col) of B is computed from its indices (which image,
/// channel and tap it stands for) and read straight from x or dy, 0 where that falls in
/// the padding or between strides. The column matrix, K R S times larger than the image for
/// a stride-1 convolution, is never written, and each value fetched from global memory
/// serves kTile multiply-adds instead of one (version 1).
///
/// The three passes differ only in their index arithmetic, so each is a small struct
/// (ForwardGemm, BackwardDataGemm, BackwardWeightGemm) that says how big its matrices are
/// and where their elements live; one kernel template runs them all. Groups are the grid's
/// third dimension: a group's GEMM uses only its own channels and filters.
#pragma once

#include "cuda_cpu/cuda_compat.hpp"
#include "kernels/cpu/conv/autotune.hpp"
#include "kernels/cuda/conv_dims.cuh"

namespace gl::kernels::cuda {
namespace {  // internal: g++ (CPU runtime) and nvcc (GPU) each compile their own copy

/// The tile edge: a block of kTile * kTile threads computes a kTile x kTile tile of C.
constexpr int kTile = 16;

/// The forward pass as a GEMM: y = w * columns(x), per group.
struct ForwardGemm {
    ConvDims d;
    const float* x;
    const float* w;
    float* y;
    __host__ __device__ int rows() const { return d.Kg; }
    __host__ __device__ int cols() const { return d.N * d.P * d.Q; }
    __host__ __device__ int depth() const { return d.Cg * d.R * d.S; }
    /// The group's filter k, tap (c, r, s): row k of w, as it lies in memory.
    __device__ float a(int group, int k, int crs) const { return w[(group * d.Kg + k) * depth() + crs]; }
    /// Element ((c, r, s), (n, p, q)) of im2col's column matrix, read from x.
    __device__ float b(int group, int crs, int npq) const {
        const int s = crs % d.S, r = crs / d.S % d.R, c = crs / (d.R * d.S);
        const int q = npq % d.Q, p = npq / d.Q % d.P, n = npq / (d.P * d.Q);
        return input_at(d, x, n, group * d.Cg + c, p, q, r, s);
    }
    __device__ void store(int group, int k, int npq, float value) const {
        const int pq = npq % (d.P * d.Q), n = npq / (d.P * d.Q);
        y[(n * d.K + group * d.Kg + k) * d.P * d.Q + pq] = value;
    }
};

/// The data gradient as a GEMM: dx = w^T * (dy gathered to the input positions), per group.
struct BackwardDataGemm {
    ConvDims d;
    const float* dy;
    const float* w;
    float* dx;
    __host__ __device__ int rows() const { return d.Cg; }
    __host__ __device__ int cols() const { return d.N * d.H * d.W; }
    __host__ __device__ int depth() const { return d.Kg * d.R * d.S; }
    /// w[k, c, r, s] of the group: w transposed, so that a row is an input channel.
    __device__ float a(int group, int c, int krs) const {
        const int rs = krs % (d.R * d.S), k = krs / (d.R * d.S);
        return w[((group * d.Kg + k) * d.Cg + c) * d.R * d.S + rs];
    }
    /// dy at the output whose tap (r, s) of filter k reads input (n, h, w); 0 where none does.
    __device__ float b(int group, int krs, int nhw) const {
        const int s = krs % d.S, r = krs / d.S % d.R, k = krs / (d.R * d.S);
        const int iw = nhw % d.W, ih = nhw / d.W % d.H, n = nhw / (d.H * d.W);
        int p, q;
        if (!output_reading(d, ih, iw, r, s, p, q)) return 0.0f;
        return dy[((n * d.K + group * d.Kg + k) * d.P + p) * d.Q + q];
    }
    __device__ void store(int group, int c, int nhw, float value) const {
        const int hw = nhw % (d.H * d.W), n = nhw / (d.H * d.W);
        dx[(n * d.C + group * d.Cg + c) * d.H * d.W + hw] = value;
    }
};

/// The weight gradient as a GEMM: dw = dy * columns(x)^T, per group; the depth is the
/// whole batch's outputs.
struct BackwardWeightGemm {
    ConvDims d;
    const float* x;
    const float* dy;
    float* dw;
    __host__ __device__ int rows() const { return d.Kg; }
    __host__ __device__ int cols() const { return d.Cg * d.R * d.S; }
    __host__ __device__ int depth() const { return d.N * d.P * d.Q; }
    /// dy[n, k, p, q] of the group's filter k.
    __device__ float a(int group, int k, int npq) const {
        const int pq = npq % (d.P * d.Q), n = npq / (d.P * d.Q);
        return dy[(n * d.K + group * d.Kg + k) * d.P * d.Q + pq];
    }
    /// Element ((n, p, q), (c, r, s)) of the transposed column matrix, read from x.
    __device__ float b(int group, int npq, int crs) const {
        const int s = crs % d.S, r = crs / d.S % d.R, c = crs / (d.R * d.S);
        const int q = npq % d.Q, p = npq / d.Q % d.P, n = npq / (d.P * d.Q);
        return input_at(d, x, n, group * d.Cg + c, p, q, r, s);
    }
    __device__ void store(int group, int k, int crs, float value) const {
        dw[(group * d.Kg + k) * cols() + crs] = value;
    }
};

/// C = A * B for the group blockIdx.z of @p gemm, tiled through shared memory. Launch:
/// block kTile * kTile, grid (ceil(cols / kTile), ceil(rows / kTile), groups).
template <class Gemm>
__global__ void conv_2_implicit_gemm(Gemm gemm) {
    __shared__ float As[kTile][kTile];
    __shared__ float Bs[kTile][kTile];
    const int group = blockIdx.z;
    const int ty = threadIdx.x / kTile, tx = threadIdx.x % kTile;  // tx fastest: a warp's loads are neighbours
    const int row = blockIdx.y * kTile + ty, col = blockIdx.x * kTile + tx;
    const int rows = gemm.rows(), cols = gemm.cols(), depth = gemm.depth();
    float acc = 0.0f;
    for (int k0 = 0; k0 < depth; k0 += kTile) {
        // One element of each tile per thread; outside the matrices, zeros that add nothing.
        As[ty][tx] = row < rows && k0 + tx < depth ? gemm.a(group, row, k0 + tx) : 0.0f;
        const int b_row = k0 + ty;  // the B tile's rows are depth indices
        Bs[ty][tx] = b_row < depth && col < cols ? gemm.b(group, b_row, col) : 0.0f;
        __syncthreads();  // both tiles complete before anyone reads them
        for (int i = 0; i < kTile; ++i) acc += As[ty][i] * Bs[i][tx];
        __syncthreads();  // everyone done before the next step overwrites them
    }
    if (row < rows && col < cols) gemm.store(group, row, col, acc);
}

/// Launches the implicit-GEMM kernel for @p gemm: one tile of C per block, a grid layer per group.
template <class Gemm>
void launch_gemm(const Gemm& gemm) {
    const dim3 grid(conv_blocks(gemm.cols(), kTile), conv_blocks(gemm.rows(), kTile), gemm.d.groups);
    gl::cuda::launch(conv_2_implicit_gemm<Gemm>, grid, dim3(kTile * kTile), 0, gemm);
}

/// Launches the implicit-GEMM kernel of @p pass: operands as in launch_conv (conv.cuh).
inline void launch_conv_implicit_gemm(conv::ConvPass pass, const ConvDims& d, const float* a, const float* b,
                                      float* out) {
    switch (pass) {
        case conv::ConvPass::Forward:
            launch_gemm(ForwardGemm{d, a, b, out});
            return;
        case conv::ConvPass::BackwardData:
            launch_gemm(BackwardDataGemm{d, a, b, out});
            return;
        case conv::ConvPass::BackwardWeight:
            launch_gemm(BackwardWeightGemm{d, a, b, out});
            return;
    }
}

}  // namespace
}  // namespace gl::kernels::cuda
