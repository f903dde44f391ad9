/// @file
/// @brief Max pooling's most common window, 2 x 2 with stride 2 and no padding, on float32
/// planes, in AVX-512 registers: each output the largest of its four taps, and where it
/// is, 16 outputs of a row per pass; and the backward, which writes each input's gradient
/// once (its window's gradient where the maximum was, 0 elsewhere).
///
/// Owns: the vector loops over one plane. The rules are those of ops/pool.cpp's loops:
/// the four taps are compared in the order top-left, top-right, bottom-left,
/// bottom-right, a tap replaces the best so far only when it is strictly larger (so the
/// first of equal values wins, and a NaN in the first tap stays), and the index of the
/// maximum counts from the start of the plane. Knows nothing about tensors or threads.
#pragma once

#include <cstdint>

namespace gl::kernels {

/// Whether this CPU runs the kernel below (AVX-512F). Where it does not, the callers
/// use their portable loops.
bool has_max_pool_2x2();

/// Max pooling of one H x W plane with 2 x 2 windows, stride 2, no padding: out and
/// where are P x Q, P = H / 2, Q = W / 2 (a last odd row or column belongs to no
/// window). Needs has_max_pool_2x2().
///
/// With @p relu_first, the pooling of ReLU(in), without writing ReLU(in) anywhere: each
/// tap is x > 0 ? x : 0 (a NaN or -0 gives +0) before the comparisons, and a window whose
/// maximum is 0 gets where = -1 (nothing under it was positive: ReLU's backward would
/// stop its gradient, so the pooling's backward skips it).
void max_pool_2x2_plane(const float* in, std::int64_t H, std::int64_t W, float* out, std::int32_t* where,
                        bool relu_first = false);

/// The backward of max_pool_2x2_plane: dx (H x W) gets gy (P x Q) at each window's
/// maximum, where[i] (an index into the plane, or -1 for none), and 0 everywhere else,
/// every element written once. Needs has_max_pool_2x2().
void max_pool_2x2_plane_backward(const float* gy, const std::int32_t* where, std::int64_t H, std::int64_t W, float* dx);

}  // namespace gl::kernels
