/// @file
/// @brief The layers of convolutional networks (Conv2d, MaxPool2d, BatchNorm2d, Dropout,
/// Flatten) and two models for 28x28 images: a small CNN and a small ResNet.
///
/// Owns: the layers' parameters and state (batch norm's running statistics) and the
/// models' wiring. The math is in ops/conv.hpp.
#pragma once

#include <memory>

#include "nn/module.hpp"
#include "ops/conv.hpp"

namespace gl::nn {

/// A 2-d convolution layer: weight [out, in/groups, k, k], Kaiming-uniform, optional bias.
class Conv2d final : public Module {
public:
    /// @param in input channels; @param out filters; @param kernel filter size;
    /// @param rng seeds the init; @param options stride, padding, dilation, groups,
    /// algorithm; @param bias whether to add a bias.
    Conv2d(std::int64_t in, std::int64_t out, std::int64_t kernel, Rng& rng, Conv2dOptions options = {},
           bool bias = true);
    Tensor forward(const Tensor& x) override;
    std::string describe() const override;
    Tensor weight;          ///< [out, in/groups, k, k]
    Tensor bias;            ///< [out], or undefined
    Conv2dOptions options;  ///< as given
};

/// max_pool2d as a layer.
class MaxPool2d final : public Module {
public:
    /// Windows of @p kernel, @p stride apart (0: stride = kernel).
    explicit MaxPool2d(std::int64_t kernel, std::int64_t stride = 0) : kernel_(kernel), stride_(stride) {}
    Tensor forward(const Tensor& x) override { return max_pool2d(x, kernel_, stride_); }
    std::string describe() const override { return "MaxPool2d(" + std::to_string(kernel_) + ")"; }
    /// The window's side.
    std::int64_t kernel() const { return kernel_; }
    /// The step between windows (= kernel() when constructed with 0).
    std::int64_t stride() const { return stride_ == 0 ? kernel_ : stride_; }

private:
    std::int64_t kernel_, stride_;
};

/// avg_pool2d as a layer; kernel 0 means the whole plane (global average pooling).
class AvgPool2d final : public Module {
public:
    /// Windows of @p kernel (0: the whole input plane), @p stride apart (0: = kernel).
    explicit AvgPool2d(std::int64_t kernel, std::int64_t stride = 0) : kernel_(kernel), stride_(stride) {}
    Tensor forward(const Tensor& x) override;
    std::string describe() const override;

private:
    std::int64_t kernel_, stride_;
};

/// batch_norm2d as a layer: gamma = 1 and beta = 0 to start, running mean 0 and variance 1.
class BatchNorm2d final : public Module {
public:
    /// Normalizes @p channels channels.
    explicit BatchNorm2d(std::int64_t channels, double momentum = 0.1, double eps = 1e-5);
    Tensor forward(const Tensor& x) override;
    std::string describe() const override { return "BatchNorm2d(" + std::to_string(gamma.shape()[0]) + ")"; }
    Tensor gamma;         ///< [C] scale (a parameter)
    Tensor beta;          ///< [C] shift (a parameter)
    Tensor running_mean;  ///< [C], updated in training
    Tensor running_var;   ///< [C], updated in training

private:
    double momentum_, eps_;
};

/// dropout as a layer, with its own random stream.
class Dropout final : public Module {
public:
    /// Drops with probability @p p; @p seed starts its random stream.
    explicit Dropout(double p, std::uint64_t seed = 0) : p_(p), rng_(seed) {}
    Tensor forward(const Tensor& x) override { return dropout(x, p_, is_training(), rng_); }
    std::string describe() const override { return "Dropout(" + std::to_string(p_).substr(0, 4) + ")"; }

private:
    double p_;
    Rng rng_;
};

/// [N, ...] -> [N, everything else].
class Flatten final : public Module {
public:
    Tensor forward(const Tensor& x) override { return flatten(x); }
    std::string describe() const override { return "Flatten"; }
};

/// Reshapes flat [N, side * side] images to [N, 1, side, side] (the data sets hand out rows).
class ToImage final : public Module {
public:
    /// Images of @p side x @p side pixels.
    explicit ToImage(std::int64_t side) : side_(side) {}
    Tensor forward(const Tensor& x) override;
    std::string describe() const override { return "ToImage(" + std::to_string(side_) + "x" + std::to_string(side_) + ")"; }
    /// The images' side in pixels.
    std::int64_t side() const { return side_; }

private:
    std::int64_t side_;
};

/// The CNN of claim CONV-2 for 28x28 images: conv 3x3 (c1) - ReLU - maxpool 2 - conv 3x3
/// (c2) - ReLU - maxpool 2 - flatten - Linear(c2 7 7, hidden) - ReLU - Linear(hidden, 10).
std::shared_ptr<Sequential> make_cnn(Rng& rng, std::int64_t side = 28, std::int64_t c1 = 32, std::int64_t c2 = 64,
                                     std::int64_t hidden = 128, std::int64_t classes = 10);

/// A residual block: x + BN(conv(ReLU(BN(conv(x))))), then ReLU; when the block changes
/// the channels or the stride, the shortcut is a 1x1 convolution with batch norm.
class ResidualBlock final : public Module {
public:
    /// @p in -> @p out channels, the first convolution with @p stride.
    ResidualBlock(std::int64_t in, std::int64_t out, std::int64_t stride, Rng& rng);
    Tensor forward(const Tensor& x) override;
    std::string describe() const override;

private:
    std::shared_ptr<Sequential> body_, shortcut_;  // shortcut_ null: identity
};

/// A small ResNet for 28x28 images: conv 3x3 (w) + BN + ReLU, residual blocks w -> w,
/// w -> 2w (stride 2), 2w -> 4w (stride 2), global average pooling, Linear(4w, 10).
std::shared_ptr<Sequential> make_resnet(Rng& rng, std::int64_t side = 28, std::int64_t width = 16,
                                        std::int64_t classes = 10);

}  // namespace gl::nn
