/// @file
/// @brief The ops of convolutional networks: conv2d, pooling, batch normalization,
/// dropout and flatten, each differentiable, on NCHW tensors (float32 or float64).
///
/// Owns: the tensor-level checks and the backward nodes. The convolution loops are in
/// kernels/cpu/conv/ (four algorithms; which one runs is the autotuner's choice,
/// kernels/cpu/conv/autotune.hpp, unless the call names one).
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "base/rng.hpp"
#include "tensor/tensor.hpp"

namespace gl {

/// The settings of a 2-d convolution ({height, width} pairs).
struct Conv2dOptions {
    std::array<std::int64_t, 2> stride{1, 1};    ///< step between receptive fields
    std::array<std::int64_t, 2> padding{0, 0};   ///< zeros added on each side
    std::array<std::int64_t, 2> dilation{1, 1};  ///< gap between filter taps
    std::int64_t groups = 1;                     ///< channel groups (C = K = groups: depthwise)
    /// "" to let the autotuner choose (or use the process-wide fixed algorithm), or an
    /// algorithm name (direct, im2col, winograd_f2, winograd_f4, fft) for every pass.
    std::string algorithm;
};

/// y = conv(x, weight) + bias for x [N, C, H, W], weight [K, C/groups, R, S] and bias [K]
/// (may be undefined): y is [N, K, P, Q]. Cross-correlation, as in every framework.
Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias, const Conv2dOptions& options = {});

/// The largest value of each kernel x kernel window, windows @p stride apart (0: stride =
/// kernel), with @p padding of -infinity; the gradient goes to the window's maximum.
Tensor max_pool2d(const Tensor& x, std::int64_t kernel, std::int64_t stride = 0, std::int64_t padding = 0);
/// max_pool2d(relu(x), kernel, stride), the same values and gradients, in one pass where a
/// fused loop exists (float32 2 x 2 windows, stride 2, on a CPU with AVX-512): ReLU's
/// output is never written, and the backward is one scatter, where the two ops wrote and
/// read a full-size activation three times (ReLU's output, the pooling's read of it,
/// ReLU's backward). Elsewhere it runs the two ops. nn::Sequential uses it for a ReLU
/// followed by a MaxPool2d.
Tensor relu_max_pool2d(const Tensor& x, std::int64_t kernel, std::int64_t stride = 0);
/// The mean of each window (padding counts as zeros in the mean, as PyTorch's default).
Tensor avg_pool2d(const Tensor& x, std::int64_t kernel, std::int64_t stride = 0, std::int64_t padding = 0);

/// Batch normalization of x [N, C, H, W] per channel, then y = gamma xhat + beta.
/// Training: normalizes with the batch's mean and (biased) variance and moves the running
/// statistics toward them by @p momentum (running_var with the unbiased variance), in
/// place. Evaluation: normalizes with the running statistics. gamma, beta, running_mean
/// and running_var are [C].
Tensor batch_norm2d(const Tensor& x, const Tensor& gamma, const Tensor& beta, const Tensor& running_mean,
                    const Tensor& running_var, bool training, double momentum = 0.1, double eps = 1e-5);

/// In training, zeroes each element with probability @p p and scales the rest by
/// 1 / (1 - p), so the expected value is unchanged; in evaluation (or p == 0), x itself.
Tensor dropout(const Tensor& x, double p, bool training, Rng& rng);

/// [N, d1, d2, ...] -> [N, d1 d2 ...].
Tensor flatten(const Tensor& x);

}  // namespace gl
