// conv2d: the tensor-level op. The forward and both gradients run through the kernel
// family of kernels/cpu/conv/, each pass through the algorithm the autotuner (or the
// caller) picked for that pass and shape:
//   dL/dx = backward_data(dL/dy, w)     (the transposed convolution)
//   dL/dw = backward_weight(x, dL/dy)   (x correlated with the output gradient)
// The bias is added to each output plane by the convolution's kernels (in cache, where
// the algorithm can); its gradient is the sum of the output gradient over the images and
// the plane.
#include <algorithm>
#include <type_traits>
#include <vector>

#include "autograd/node.hpp"
#include "device/device_ops.hpp"
#include "kernels/cpu/conv/autotune.hpp"
#include "kernels/cpu/elementwise.hpp"
#include "ops/conv.hpp"
#include "ops/op_trace.hpp"
#include "ops/ops.hpp"
#include "parallel/thread_pool.hpp"

namespace gl {
namespace {

namespace kc = kernels::conv;

kc::ConvGeometry geometry_of(const Tensor& x, const Tensor& w, const Conv2dOptions& o) {
    kc::ConvGeometry g;
    g.batch = x.shape()[0], g.in_channels = x.shape()[1], g.in_h = x.shape()[2], g.in_w = x.shape()[3];
    g.out_channels = w.shape()[0], g.kernel_h = w.shape()[2], g.kernel_w = w.shape()[3];
    g.stride_h = o.stride[0], g.stride_w = o.stride[1], g.pad_h = o.padding[0], g.pad_w = o.padding[1];
    g.dilation_h = o.dilation[0], g.dilation_w = o.dilation[1], g.groups = o.groups;
    return g;
}

void check_inputs(const Tensor& x, const Tensor& w, const Tensor& bias, const Conv2dOptions& o) {
    check(x.dim() == 4, "conv2d: the input must be 4-d [N, C, H, W], got " + shape_str(x.shape()));
    check(w.dim() == 4, "conv2d: the weight must be 4-d [K, C/groups, R, S], got " + shape_str(w.shape()));
    check(x.dtype() == w.dtype() && (x.dtype() == DType::Float32 || x.dtype() == DType::Float64),
          "conv2d: input and weight must both be float32 or both float64, got " + name_of(x.dtype()) + " and " +
              name_of(w.dtype()));
    check(o.groups >= 1 && w.shape()[1] * o.groups == x.shape()[1],
          "conv2d: the weight has " + std::to_string(w.shape()[1]) + " input channels per group and groups is " +
              std::to_string(o.groups) + ", but the input has " + std::to_string(x.shape()[1]) + " channels");
    check(!bias.defined() || (bias.dim() == 1 && bias.shape()[0] == w.shape()[0] && bias.dtype() == w.dtype()),
          "conv2d: the bias must be 1-d, of the weight's dtype, with one entry per filter (" + std::to_string(w.shape()[0]) + ")");
}

// The algorithm for one pass: the caller's, or the autotuner's choice.
kc::ConvAlgo algorithm_for(kc::ConvPass pass, const kc::ConvGeometry& g, DType dtype, const std::string& requested) {
    if (!requested.empty()) return kc::find_conv_algorithm(requested).algo;
    return kc::choose(pass, g, dtype == DType::Float64);
}

// The sum of @p n values in double, in interleaved partial sums: one running sum waits
// for each add to finish before the next (a chain as long as the plane); independent
// ones keep the adder busy (float32: sixteen, in vectors; float64: four). The order is
// fixed, so the result is too.
template <class T>
double plane_sum(const T* v, std::int64_t n) {
    if constexpr (std::is_same_v<T, float>) {
        return kernels::sum_in_double(v, n);  // 16 sums, vectorised
    } else {
        double s[4] = {0, 0, 0, 0};
        std::int64_t i = 0;
        for (; i + 4 <= n; i += 4)
            for (int j = 0; j < 4; ++j) s[j] += v[i + j];
        for (; i < n; ++i) s[0] += v[i];
        return (s[0] + s[1]) + (s[2] + s[3]);
    }
}

// db[k] = sum over n, p, q of dy[n, k, p, q]: each plane's sum in double, then, for each
// k, the planes' sums added in image order, so the result does not depend on the thread
// count. The plane sums are taken image by image, each thread a run of whole images, so
// the threads read dy front to back (a task per filter would read one plane of every
// image, a stride of the whole image apart: 1.5-2x as long on the CNN's conv1).
template <class T>
Tensor bias_gradient(const kc::ConvGeometry& g, const T* dy, DType dtype) {
    const std::int64_t plane = g.out_h() * g.out_w(), K = g.out_channels;
    std::vector<double> plane_sums(static_cast<std::size_t>(g.batch * K));
    parallel_for(g.batch * K, std::max<std::int64_t>(K, 1), [&](std::int64_t first, std::int64_t last) {
        for (std::int64_t nk = first; nk < last; ++nk) plane_sums[static_cast<std::size_t>(nk)] = plane_sum(dy + nk * plane, plane);
    });
    Tensor db = empty({K}, dtype);
    T* out = db.data<T>();
    for (std::int64_t k = 0; k < K; ++k) {
        double sum = 0;
        for (std::int64_t n = 0; n < g.batch; ++n) sum += plane_sums[static_cast<std::size_t>(n * K + k)];
        out[k] = static_cast<T>(sum);
    }
    return db;
}

struct Conv2dBackward final : Node {
    Tensor x, w;
    bool has_bias = false;
    kc::ConvGeometry geometry;
    std::string algorithm;
    std::string name() const override { return "Conv2dBackward"; }
    std::vector<Tensor> backward(const Tensor& grad) override {
        if (device::on_device(grad)) return backward_on_device(grad);
        const Tensor g = grad.contiguous();
        Tensor dx, dw, db;
        dispatch_floating(x.dtype(), "conv2d backward", [&]<class T>() {
            if (next[0]) {
                dx = empty(x.shape(), x.dtype());
                kc::backward_data(algorithm_for(kc::ConvPass::BackwardData, geometry, x.dtype(), algorithm), geometry,
                                  g.data<T>(), w.data<T>(), dx.data<T>());
            }
            if (next[1]) {
                dw = empty(w.shape(), w.dtype());
                kc::backward_weight(algorithm_for(kc::ConvPass::BackwardWeight, geometry, x.dtype(), algorithm),
                                    geometry, x.data<T>(), g.data<T>(), dw.data<T>());
            }
            if (has_bias && next[2]) db = bias_gradient(geometry, g.data<T>(), x.dtype());
        });
        if (!has_bias) return {dx, dw};
        return {dx, dw, db};
    }

    // The same three gradients by the device's implicit-GEMM kernel; the bias gradient is
    // the device's sum over the images and the plane.
    std::vector<Tensor> backward_on_device(const Tensor& g) const {
        Tensor dx, dw, db;
        if (next[0]) dx = device::conv_pass(kc::ConvPass::BackwardData, geometry, g, w, x.shape());
        if (next[1]) dw = device::conv_pass(kc::ConvPass::BackwardWeight, geometry, x, g, w.shape());
        if (has_bias && next[2]) db = reshape(device::sum_dims(g, {true, false, true, true}), {geometry.out_channels});
        if (!has_bias) return {dx, dw};
        return {dx, dw, db};
    }
};

// conv2d on a device: the implicit-GEMM kernel (kernels/cuda/conv.cuh), whatever algorithm
// the options name (the CPU's algorithms and its autotuner are for the CPU), and the bias
// added by the broadcast kernel.
Tensor conv2d_on_device(const Tensor& x, const Tensor& w, const Tensor& bias, const kc::ConvGeometry& g) {
    Tensor y = device::conv_pass(kc::ConvPass::Forward, g, x, w, {g.batch, g.out_channels, g.out_h(), g.out_w()});
    if (!bias.defined()) return y;
    const Tensor per_plane = reshape(bias.detach(), {g.out_channels, 1, 1});
    return device::binary(kernels::BinaryOp::add, y, per_plane, y.shape());
}

}  // namespace

Tensor conv2d(const Tensor& x_in, const Tensor& w_in, const Tensor& bias, const Conv2dOptions& options) {
    const OpTrace trace("conv2d");
    check_inputs(x_in, w_in, bias, options);
    if (bias.defined()) check_same_device("conv2d", {&x_in, &w_in, &bias}, {"input", "weight", "bias"});
    else check_same_device("conv2d", {&x_in, &w_in}, {"input", "weight"});
    const Tensor x = x_in.contiguous(), w = w_in.contiguous();
    const kc::ConvGeometry g = geometry_of(x, w, options);
    g.validate();
    Tensor y;
    if (device::on_device(x)) {
        y = conv2d_on_device(x, w, bias, g);
    } else {
        y = empty({g.batch, g.out_channels, g.out_h(), g.out_w()}, x.dtype());
        dispatch_floating(x.dtype(), "conv2d", [&]<class T>() {
            const Tensor b = bias.defined() ? bias.contiguous() : Tensor();
            kc::forward(algorithm_for(kc::ConvPass::Forward, g, x.dtype(), options.algorithm), g, x.data<T>(),
                        w.data<T>(), y.data<T>(), b.defined() ? b.data<T>() : nullptr);
        });
    }
    std::vector<Tensor> inputs = {x_in, w_in};
    if (bias.defined()) inputs.push_back(bias);
    if (should_record(inputs)) {
        auto node = std::make_shared<Conv2dBackward>();
        node->x = save_for_backward(x);
        node->w = save_for_backward(w);
        node->geometry = g;
        node->algorithm = options.algorithm;
        node->has_bias = bias.defined();
        record(y, node, inputs);
    }
    return bias.defined() ? trace.done({x_in, w_in, bias}, y) : trace.done({x_in, w_in}, y);
}

}  // namespace gl
