/// @file
/// @brief Version 1 of the CUDA convolution family: one thread per element written, the
/// loops of the definition inside it.
///
/// The CPU direct convolution (kernels/cpu/conv/1_direct.cpp) scatters in its backward
/// passes: each output gradient is added into every input (or weight) it came from. On a
/// GPU thousands of threads would then add into the same element, so each pass here is
/// written as a gather instead: a thread owns one element of the array it writes and sums
/// everything that contributes to it, and no two threads ever write the same address (no
/// atomics, and the result does not depend on the order the blocks run in).
///
///   forward          thread (n, k, p, q): y = sum over c, r, s of w[k, c, r, s] x[n, ., ., .]
///   backward_data    thread (n, c, h, w): dx = sum over the (k, r, s) whose output reads (h, w)
///   backward_weight  thread (k, c, r, s): dw = sum over n, p, q of dy[n, k, p, q] x[n, ., ., .]
///
/// Every multiply reads both operands from global memory; version 2 stages them in
/// shared memory.
#pragma once

#include "cuda_cpu/cuda_compat.hpp"
#include "kernels/cpu/conv/autotune.hpp"
#include "kernels/cuda/conv_dims.cuh"

namespace gl::kernels::cuda {
namespace {  // internal: g++ (CPU runtime) and nvcc (GPU) each compile their own copy

/// Threads per block of the direct kernels.
constexpr int kConvDirectBlock = 256;

/// y = conv(x, w): thread i computes y's element i. Launch: 1-d, N K P Q threads or more.
__global__ void conv_1_direct_forward(ConvDims d, const float* x, const float* w, float* y) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= d.N * d.K * d.P * d.Q) return;
    const int q = i % d.Q, p = i / d.Q % d.P, k = i / (d.P * d.Q) % d.K, n = i / (d.K * d.P * d.Q);
    const int c0 = k / d.Kg * d.Cg;  // first input channel of k's group
    float acc = 0.0f;
    for (int c = 0; c < d.Cg; ++c)
        for (int r = 0; r < d.R; ++r)
            for (int s = 0; s < d.S; ++s)
                acc += w[((k * d.Cg + c) * d.R + r) * d.S + s] * input_at(d, x, n, c0 + c, p, q, r, s);
    y[i] = acc;
}

/// dx = dL/dx from dy: thread i computes dx's element i from the outputs that read it.
/// Launch: 1-d, N C H W threads or more.
__global__ void conv_1_direct_backward_data(ConvDims d, const float* dy, const float* w, float* dx) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= d.N * d.C * d.H * d.W) return;
    const int iw = i % d.W, ih = i / d.W % d.H, c = i / (d.H * d.W) % d.C, n = i / (d.C * d.H * d.W);
    const int group = c / d.Cg, c_in_group = c % d.Cg;
    float acc = 0.0f;
    for (int k = group * d.Kg; k < (group + 1) * d.Kg; ++k)
        for (int r = 0; r < d.R; ++r)
            for (int s = 0; s < d.S; ++s) {
                int p, q;
                if (!output_reading(d, ih, iw, r, s, p, q)) continue;
                acc += w[((k * d.Cg + c_in_group) * d.R + r) * d.S + s] * dy[((n * d.K + k) * d.P + p) * d.Q + q];
            }
    dx[i] = acc;
}

/// dw = dL/dw from x and dy: thread i computes dw's element i over the whole batch.
/// Launch: 1-d, K (C/groups) R S threads or more.
__global__ void conv_1_direct_backward_weight(ConvDims d, const float* x, const float* dy, float* dw) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= d.K * d.Cg * d.R * d.S) return;
    const int s = i % d.S, r = i / d.S % d.R, c = i / (d.R * d.S) % d.Cg, k = i / (d.Cg * d.R * d.S);
    const int c_abs = k / d.Kg * d.Cg + c;
    float acc = 0.0f;
    for (int n = 0; n < d.N; ++n)
        for (int p = 0; p < d.P; ++p)
            for (int q = 0; q < d.Q; ++q)
                acc += dy[((n * d.K + k) * d.P + p) * d.Q + q] * input_at(d, x, n, c_abs, p, q, r, s);
    dw[i] = acc;
}

/// Launches the direct kernel of @p pass: operands as in launch_conv (conv.cuh).
inline void launch_conv_direct(conv::ConvPass pass, const ConvDims& d, const float* a, const float* b, float* out) {
    using gl::cuda::launch;
    const dim3 block(kConvDirectBlock);
    switch (pass) {
        case conv::ConvPass::Forward:
            launch(conv_1_direct_forward, dim3(conv_blocks(1LL * d.N * d.K * d.P * d.Q, kConvDirectBlock)), block, 0,
                   d, a, b, out);
            return;
        case conv::ConvPass::BackwardData:
            launch(conv_1_direct_backward_data, dim3(conv_blocks(1LL * d.N * d.C * d.H * d.W, kConvDirectBlock)),
                   block, 0, d, a, b, out);
            return;
        case conv::ConvPass::BackwardWeight:
            launch(conv_1_direct_backward_weight, dim3(conv_blocks(1LL * d.K * d.Cg * d.R * d.S, kConvDirectBlock)),
                   block, 0, d, a, b, out);
            return;
    }
}

}  // namespace
}  // namespace gl::kernels::cuda
