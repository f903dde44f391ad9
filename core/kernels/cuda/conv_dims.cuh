/// @file
/// @brief The sizes of a convolution as a kernel argument (plain ints, copied to every
/// thread), and the index arithmetic both CUDA convolution versions share.
#pragma once

#include <climits>
#include <string>

#include "base/error.hpp"
#include "cuda_cpu/cuda_compat.hpp"
#include "kernels/cpu/conv/conv.hpp"

namespace gl::kernels::cuda {
namespace {  // internal: g++ (CPU runtime) and nvcc (GPU) each compile their own copy

/// conv::ConvGeometry flattened into ints, with the output size and per-group channel
/// counts computed once on the host. Layouts as in conv.hpp: x [N, C, H, W],
/// w [K, C/groups, R, S], y [N, K, P, Q].
struct ConvDims {
    int N, C, H, W;   ///< input
    int K, R, S;      ///< filters
    int P, Q;         ///< output rows and columns
    int stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w;
    int groups;
    int Cg, Kg;       ///< input channels each filter sees; filters per group
};

/// The ConvDims of @p g; throws if @p g is inconsistent or an array is too large to index
/// with an int (the kernels' index type).
inline ConvDims conv_dims(const conv::ConvGeometry& g) {
    g.validate();
    for (long long size : {g.input_size(), g.weight_size(), g.output_size()})
        if (size > INT_MAX)
            throw gl::Error("cuda_conv: " + g.str() + " has an array of " + std::to_string(size) +
                            " elements; the CUDA kernels index with int: use fewer images per call");
    auto i = [](std::int64_t v) { return static_cast<int>(v); };
    return {i(g.batch), i(g.in_channels), i(g.in_h), i(g.in_w), i(g.out_channels), i(g.kernel_h), i(g.kernel_w),
            i(g.out_h()), i(g.out_w()), i(g.stride_h), i(g.stride_w), i(g.pad_h), i(g.pad_w), i(g.dilation_h),
            i(g.dilation_w), i(g.groups), i(g.group_in()), i(g.group_out())};
}

/// x[n, c, ih, iw] for the input row and column that filter tap (r, s) of output (p, q)
/// reads, or 0 where that lies in the padding. @p c is the absolute channel.
__device__ __forceinline__ float input_at(const ConvDims& d, const float* x, int n, int c, int p, int q, int r,
                                          int s) {
    const int ih = p * d.stride_h - d.pad_h + r * d.dilation_h;
    const int iw = q * d.stride_w - d.pad_w + s * d.dilation_w;
    if (ih < 0 || ih >= d.H || iw < 0 || iw >= d.W) return 0.0f;
    return x[((n * d.C + c) * d.H + ih) * d.W + iw];
}

/// The output position whose tap (r, s) reads input (ih, iw), if there is one: the
/// inverse of input_at's arithmetic. False where the stride skips (ih, iw) for this tap
/// or the position falls outside the output.
__device__ __forceinline__ bool output_reading(const ConvDims& d, int ih, int iw, int r, int s, int& p, int& q) {
    const int ph = ih + d.pad_h - r * d.dilation_h;  // = p * stride_h
    const int pw = iw + d.pad_w - s * d.dilation_w;  // = q * stride_w
    if (ph < 0 || pw < 0 || ph % d.stride_h != 0 || pw % d.stride_w != 0) return false;
    p = ph / d.stride_h;
    q = pw / d.stride_w;
    return p < d.P && q < d.Q;
}

/// Blocks of @p threads_per_block that cover @p total threads (at least one: CUDA rejects
/// an empty grid, and the kernels test their index against the total anyway).
inline unsigned conv_blocks(long long total, int threads_per_block) {
    const long long blocks = (total + threads_per_block - 1) / threads_per_block;
    return static_cast<unsigned>(blocks > 0 ? blocks : 1);
}

}  // namespace
}  // namespace gl::kernels::cuda
