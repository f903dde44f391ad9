// The layers of convolutional networks and the two models built from them.
#include "nn/conv_layers.hpp"

#include <cmath>

#include "memory/tracking_allocator.hpp"
#include "ops/ops.hpp"

namespace gl::nn {

Conv2d::Conv2d(std::int64_t in, std::int64_t out, std::int64_t kernel, Rng& rng, Conv2dOptions opts, bool with_bias)
    : options(std::move(opts)) {
    check(in >= 1 && out >= 1 && kernel >= 1 && options.groups >= 1 && in % options.groups == 0 &&
              out % options.groups == 0,
          "Conv2d: need positive sizes with groups dividing both channel counts");
    // Kaiming-He uniform for ReLU: fan_in = (in / groups) k k.
    const std::int64_t fan_in = in / options.groups * kernel * kernel;
    const double bound = std::sqrt(6.0 / static_cast<double>(fan_in));
    weight = register_parameter("weight", rand_uniform({out, in / options.groups, kernel, kernel}, -bound, bound, rng));
    if (with_bias) bias = register_parameter("bias", zeros({out}));
}

Tensor Conv2d::forward(const Tensor& x) { return conv2d(x, weight, bias, options); }

std::string Conv2d::describe() const {
    return "Conv2d(" + std::to_string(weight.shape()[1] * options.groups) + " -> " + std::to_string(weight.shape()[0]) +
           ", " + std::to_string(weight.shape()[2]) + "x" + std::to_string(weight.shape()[3]) +
           (options.stride[0] != 1 ? ", stride " + std::to_string(options.stride[0]) : "") + ")";
}

Tensor AvgPool2d::forward(const Tensor& x) {
    check(x.dim() == 4, "AvgPool2d: the input must be 4-d [N, C, H, W], got " + shape_str(x.shape()));
    const std::int64_t kernel = kernel_ == 0 ? x.shape()[2] : kernel_;
    check(kernel_ != 0 || x.shape()[2] == x.shape()[3], "AvgPool2d(global): the planes must be square");
    return avg_pool2d(x, kernel, stride_);
}

std::string AvgPool2d::describe() const {
    return kernel_ == 0 ? "AvgPool2d(global)" : "AvgPool2d(" + std::to_string(kernel_) + ")";
}

BatchNorm2d::BatchNorm2d(std::int64_t channels, double momentum, double eps) : momentum_(momentum), eps_(eps) {
    gamma = register_parameter("gamma", ones({channels}));
    beta = register_parameter("beta", zeros({channels}));
    running_mean = zeros({channels});
    running_var = ones({channels});
    memory::tag_memory(running_mean, memory::MemoryCategory::Parameter);
    memory::tag_memory(running_var, memory::MemoryCategory::Parameter);
}

Tensor BatchNorm2d::forward(const Tensor& x) {
    return batch_norm2d(x, gamma, beta, running_mean, running_var, is_training(), momentum_, eps_);
}

Tensor ToImage::forward(const Tensor& x) {
    check(x.dim() == 2 && x.shape()[1] == side_ * side_,
          "ToImage: expects [N, " + std::to_string(side_ * side_) + "] rows of pixels, got " + shape_str(x.shape()));
    return reshape(x, {x.shape()[0], 1, side_, side_});
}

std::shared_ptr<Sequential> make_cnn(Rng& rng, std::int64_t side, std::int64_t c1, std::int64_t c2, std::int64_t hidden,
                                     std::int64_t classes) {
    check(side % 4 == 0, "make_cnn: the image side must be a multiple of 4 (two 2x2 poolings)");
    Conv2dOptions same;  // 3x3 with padding 1 keeps the plane's size
    same.padding = {1, 1};
    auto net = std::make_shared<Sequential>();
    net->add(std::make_shared<ToImage>(side));
    net->add(std::make_shared<Conv2d>(1, c1, 3, rng, same)).add(std::make_shared<ReLU>()).add(std::make_shared<MaxPool2d>(2));
    net->add(std::make_shared<Conv2d>(c1, c2, 3, rng, same)).add(std::make_shared<ReLU>()).add(std::make_shared<MaxPool2d>(2));
    net->add(std::make_shared<Flatten>());
    net->add(std::make_shared<Linear>(c2 * (side / 4) * (side / 4), hidden, rng)).add(std::make_shared<ReLU>());
    net->add(std::make_shared<Linear>(hidden, classes, rng));
    return net;
}

namespace {
// conv 3x3 (or 1x1) without bias (batch norm's beta is the bias) followed by batch norm.
std::shared_ptr<Sequential> conv_bn(std::int64_t in, std::int64_t out, std::int64_t kernel, std::int64_t stride, Rng& rng) {
    Conv2dOptions o;
    o.stride = {stride, stride};
    o.padding = {kernel / 2, kernel / 2};
    auto seq = std::make_shared<Sequential>();
    seq->add(std::make_shared<Conv2d>(in, out, kernel, rng, o, false)).add(std::make_shared<BatchNorm2d>(out));
    return seq;
}
}  // namespace

ResidualBlock::ResidualBlock(std::int64_t in, std::int64_t out, std::int64_t stride, Rng& rng) {
    body_ = std::make_shared<Sequential>();
    body_->add(conv_bn(in, out, 3, stride, rng)).add(std::make_shared<ReLU>()).add(conv_bn(out, out, 3, 1, rng));
    register_module("body", body_);
    if (in != out || stride != 1) {
        shortcut_ = conv_bn(in, out, 1, stride, rng);
        register_module("shortcut", shortcut_);
    }
}

Tensor ResidualBlock::forward(const Tensor& x) {
    const Tensor skip = shortcut_ ? shortcut_->forward(x) : x;
    return relu(body_->forward(x) + skip);
}

std::string ResidualBlock::describe() const { return "ResidualBlock[" + body_->describe() + "]"; }

std::shared_ptr<Sequential> make_resnet(Rng& rng, std::int64_t side, std::int64_t width, std::int64_t classes) {
    auto net = std::make_shared<Sequential>();
    net->add(std::make_shared<ToImage>(side));
    net->add(conv_bn(1, width, 3, 1, rng)).add(std::make_shared<ReLU>());
    net->add(std::make_shared<ResidualBlock>(width, width, 1, rng));
    net->add(std::make_shared<ResidualBlock>(width, 2 * width, 2, rng));
    net->add(std::make_shared<ResidualBlock>(2 * width, 4 * width, 2, rng));
    net->add(std::make_shared<AvgPool2d>(0)).add(std::make_shared<Flatten>());
    net->add(std::make_shared<Linear>(4 * width, classes, rng));
    return net;
}

}  // namespace gl::nn
