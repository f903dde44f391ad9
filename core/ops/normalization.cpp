// Batch normalization and dropout: the two layers whose behaviour differs between
// training and evaluation.
//
// Batch norm, per channel c over the M = N H W values of the batch:
//   xhat = (x - mean) / sqrt(var + eps),  y = gamma xhat + beta
// and its backward (mean and var depend on every x of the channel):
//   dx = gamma / sqrt(var + eps) / M * (M dy - sum(dy) - xhat sum(dy xhat))
//   dgamma = sum(dy xhat),  dbeta = sum(dy)
// In evaluation mean and var are the running statistics, constants, so dx = dy gamma / sqrt(var + eps).
#include <cmath>
#include <vector>

#include "autograd/node.hpp"
#include "ops/conv.hpp"
#include "ops/op_trace.hpp"
#include "ops/ops.hpp"

namespace gl {
namespace {

struct BatchNormBackward final : Node {
    Tensor xhat, gamma;          // [N, C, H, W] normalized input; [C]
    std::vector<double> invstd;  // 1 / sqrt(var + eps) per channel
    bool training = true;
    std::string name() const override { return "BatchNormBackward"; }
    std::vector<Tensor> backward(const Tensor& grad) override {
        const Tensor g = grad.contiguous();
        const std::int64_t N = xhat.shape()[0], C = xhat.shape()[1], HW = xhat.shape()[2] * xhat.shape()[3];
        const double M = static_cast<double>(N * HW);
        Tensor dx = empty(xhat.shape(), xhat.dtype()), dgamma = empty({C}, xhat.dtype()), dbeta = empty({C}, xhat.dtype());
        dispatch_floating(xhat.dtype(), "batch_norm2d backward", [&]<class T>() {
            const T* dy = g.data<T>();
            const T* xh = xhat.data<T>();
            const Tensor gc = gamma.contiguous();
            T* gx = dx.data<T>();
            for (std::int64_t c = 0; c < C; ++c) {
                double sum_dy = 0, sum_dy_xhat = 0;
                for (std::int64_t n = 0; n < N; ++n)
                    for (std::int64_t i = (n * C + c) * HW; i < (n * C + c + 1) * HW; ++i)
                        sum_dy += dy[i], sum_dy_xhat += static_cast<double>(dy[i]) * xh[i];
                dgamma.data<T>()[c] = static_cast<T>(sum_dy_xhat);
                dbeta.data<T>()[c] = static_cast<T>(sum_dy);
                const double scale = gc.data<T>()[c] * invstd[static_cast<std::size_t>(c)];
                for (std::int64_t n = 0; n < N; ++n)
                    for (std::int64_t i = (n * C + c) * HW; i < (n * C + c + 1) * HW; ++i)
                        gx[i] = static_cast<T>(
                            training ? scale / M * (M * dy[i] - sum_dy - xh[i] * sum_dy_xhat) : scale * dy[i]);
            }
        });
        return {dx, dgamma, dbeta};
    }
};

// Per-channel mean and biased variance of x [N, C, H, W], in double.
void channel_statistics(const Tensor& x, std::vector<double>& mean, std::vector<double>& var) {
    const std::int64_t N = x.shape()[0], C = x.shape()[1], HW = x.shape()[2] * x.shape()[3];
    mean.assign(static_cast<std::size_t>(C), 0.0), var.assign(static_cast<std::size_t>(C), 0.0);
    dispatch_floating(x.dtype(), "batch_norm2d", [&]<class T>() {
        const T* in = x.data<T>();
        for (std::int64_t c = 0; c < C; ++c) {
            double sum = 0, squares = 0;
            for (std::int64_t n = 0; n < N; ++n)
                for (std::int64_t i = (n * C + c) * HW; i < (n * C + c + 1) * HW; ++i) sum += in[i];
            const double m = sum / static_cast<double>(N * HW);
            for (std::int64_t n = 0; n < N; ++n)
                for (std::int64_t i = (n * C + c) * HW; i < (n * C + c + 1) * HW; ++i) squares += (in[i] - m) * (in[i] - m);
            mean[static_cast<std::size_t>(c)] = m, var[static_cast<std::size_t>(c)] = squares / static_cast<double>(N * HW);
        }
    });
}

}  // namespace

Tensor batch_norm2d(const Tensor& x_in, const Tensor& gamma, const Tensor& beta, const Tensor& running_mean,
                    const Tensor& running_var, bool training, double momentum, double eps) {
    const OpTrace trace("batch_norm2d");
    check(x_in.dim() == 4, "batch_norm2d: the input must be 4-d [N, C, H, W], got " + shape_str(x_in.shape()));
    const std::int64_t N = x_in.shape()[0], C = x_in.shape()[1], HW = x_in.shape()[2] * x_in.shape()[3];
    for (const Tensor* t : {&gamma, &beta, &running_mean, &running_var})
        check(t->dim() == 1 && t->shape()[0] == C && t->dtype() == x_in.dtype(),
              "batch_norm2d: gamma, beta and the running statistics must be [" + std::to_string(C) + "] of the input's dtype");
    check(!training || N * HW > 1, "batch_norm2d: training needs more than one value per channel");
    const Tensor x = x_in.contiguous();
    std::vector<double> mean, var;
    if (training) {
        channel_statistics(x, mean, var);
        dispatch_floating(x.dtype(), "batch_norm2d", [&]<class T>() {  // the running statistics, in place
            const double unbiased = static_cast<double>(N * HW) / static_cast<double>(N * HW - 1);
            for (std::int64_t c = 0; c < C; ++c) {
                T& rm = running_mean.data<T>()[c * running_mean.strides()[0]];
                T& rv = running_var.data<T>()[c * running_var.strides()[0]];
                rm = static_cast<T>((1 - momentum) * rm + momentum * mean[static_cast<std::size_t>(c)]);
                rv = static_cast<T>((1 - momentum) * rv + momentum * var[static_cast<std::size_t>(c)] * unbiased);
            }
        });
    } else {
        mean = to_dtype(running_mean, DType::Float64).to_vector<double>();
        var = to_dtype(running_var, DType::Float64).to_vector<double>();
    }
    std::vector<double> invstd(static_cast<std::size_t>(C));
    for (std::size_t c = 0; c < invstd.size(); ++c) invstd[c] = 1.0 / std::sqrt(var[c] + eps);
    Tensor xhat = empty(x.shape(), x.dtype()), y = empty(x.shape(), x.dtype());
    dispatch_floating(x.dtype(), "batch_norm2d", [&]<class T>() {
        const Tensor gc = gamma.contiguous(), bc = beta.contiguous();
        const T* in = x.data<T>();
        const T *scale = gc.data<T>(), *shift = bc.data<T>();
        T *normalized = xhat.data<T>(), *out = y.data<T>();
        for (std::int64_t n = 0; n < N; ++n)
            for (std::int64_t c = 0; c < C; ++c)
                for (std::int64_t i = (n * C + c) * HW; i < (n * C + c + 1) * HW; ++i) {
                    const T h = static_cast<T>((in[i] - mean[static_cast<std::size_t>(c)]) * invstd[static_cast<std::size_t>(c)]);
                    normalized[i] = h;
                    out[i] = scale[c] * h + shift[c];
                }
    });
    if (should_record({x_in, gamma, beta})) {
        auto node = std::make_shared<BatchNormBackward>();
        node->xhat = save_for_backward(xhat);
        node->gamma = save_for_backward(gamma);
        node->invstd = invstd;
        node->training = training;
        record(y, node, {x_in, gamma, beta});
    }
    return trace.done({x_in, gamma, beta}, y);
}

Tensor dropout(const Tensor& x, double p, bool training, Rng& rng) {
    check(p >= 0 && p < 1, "dropout: p must be in [0, 1), got " + std::to_string(p));
    if (!training || p == 0) return x;
    Tensor mask = empty(x.shape(), x.dtype());
    dispatch_floating(x.dtype(), "dropout", [&]<class T>() {
        const T keep_scale = static_cast<T>(1.0 / (1.0 - p));
        T* m = mask.data<T>();
        for (std::int64_t i = 0; i < mask.numel(); ++i) m[i] = rng.uniform() < p ? T(0) : keep_scale;
    });
    return mul(x, mask);  // recorded as a product: the gradient is grad * mask
}

}  // namespace gl
