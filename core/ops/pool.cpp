// Pooling over windows of NCHW planes, and flatten.
//
// Max pooling keeps the largest value of each window and remembers where it was: the
// gradient flows back to that one element. Average pooling spreads each output's
// gradient evenly over its window (padding included in the count, as PyTorch does).
#include <algorithm>
#include <type_traits>
#include <utility>

#include "autograd/node.hpp"
#include "device/device_ops.hpp"
#include "kernels/cpu/pool.hpp"
#include "ops/conv.hpp"
#include "ops/op_trace.hpp"
#include "ops/ops.hpp"
#include "parallel/thread_pool.hpp"

namespace gl {
namespace {

// The windows of one pooling call.
struct PoolGeometry {
    std::int64_t planes, H, W, kernel, stride, pad, P, Q;
    PoolGeometry(const Tensor& x, std::int64_t k, std::int64_t s, std::int64_t p, const char* op)
        : planes(0), H(0), W(0), kernel(k), stride(s == 0 ? k : s), pad(p), P(0), Q(0) {
        check(x.dim() == 4, std::string(op) + ": the input must be 4-d [N, C, H, W], got " + shape_str(x.shape()));
        check(kernel >= 1 && stride >= 1 && pad >= 0 && 2 * pad <= kernel,
              std::string(op) + ": need kernel >= 1, stride >= 1 and 0 <= padding <= kernel / 2");
        planes = x.shape()[0] * x.shape()[1], H = x.shape()[2], W = x.shape()[3];
        check(H + 2 * pad >= kernel && W + 2 * pad >= kernel,
              std::string(op) + ": the window is larger than the padded input " + shape_str(x.shape()));
        P = (H + 2 * pad - kernel) / stride + 1, Q = (W + 2 * pad - kernel) / stride + 1;
    }
    Shape out_shape(const Tensor& x) const { return {x.shape()[0], x.shape()[1], P, Q}; }
    /// The same windows as a device kernel reads them.
    kernels::PoolDims dims() const { return {planes, H, W, kernel, stride, pad, P, Q}; }
};

struct MaxPoolBackward final : Node {
    Tensor argmax;  // int32 [N, C, P, Q]: index within its input plane of each maximum
    Shape input_shape;
    kernels::PoolDims dims;  // the windows, for the device kernel
    // relu_max_pool2d's: an index of -1 marks a window with nothing positive under it,
    // whose gradient ReLU's backward would have stopped.
    bool after_relu = false;
    std::string name() const override { return after_relu ? "ReluMaxPoolBackward" : "MaxPoolBackward"; }
    std::vector<Tensor> backward(const Tensor& grad) override {
        if (device::on_device(grad)) return {device::max_pool2d_backward(grad, argmax, dims, input_shape)};
        const Tensor g = grad.contiguous();
        Tensor dx = empty(input_shape, g.dtype());
        const std::int64_t plane_in = input_shape[2] * input_shape[3], plane_out = g.shape()[2] * g.shape()[3];
        dispatch_floating(g.dtype(), "max_pool2d backward", [&]<class T>() {
            const std::int32_t* where = argmax.data<std::int32_t>();
            const T* gy = g.data<T>();
            T* gx = dx.data<T>();
            // Planes are independent: each thread takes whole planes, so no two add to one
            // element. A thread clears its own planes right before adding into them (one
            // pass over dx, on both cores, while the plane is in cache; zeros() would
            // clear all of dx first, on one thread).
            const std::int64_t planes = input_shape[0] * input_shape[1];  // N C, in dx and in g
            // 2 x 2 windows of float32 in AVX-512 registers: every input written once (0.49 ->
            // 0.28 ms per step for the CNN's two poolings, ReLU's included, against
            // clearing each plane and adding each gradient at its index, below).
            if constexpr (std::is_same_v<T, float>) {
                if (dims.kernel == 2 && dims.stride == 2 && dims.pad == 0 && kernels::has_max_pool_2x2()) {
                    parallel_for(planes, 16, [&](std::int64_t first, std::int64_t last) {
                        for (std::int64_t p = first; p < last; ++p)
                            kernels::max_pool_2x2_plane_backward(gy + p * plane_out, where + p * plane_out, input_shape[2],
                                                                 input_shape[3], gx + p * plane_in);
                    });
                    return;
                }
            }
            // relu_max_pool2d exists only where the loop above does, so no -1 reaches here.
            check(!after_relu, "relu_max_pool2d backward: no vector loop for these windows");
            parallel_for(planes, 16, [&](std::int64_t first, std::int64_t last) {
                for (std::int64_t p = first; p < last; ++p) {
                    T* plane = gx + p * plane_in;
                    std::fill(plane, plane + plane_in, T(0));
                    for (std::int64_t i = p * plane_out; i < (p + 1) * plane_out; ++i) plane[where[i]] += gy[i];
                }
            });
        });
        return {dx};
    }
};

struct AvgPoolBackward final : Node {
    PoolGeometry geometry;
    Shape input_shape;
    explicit AvgPoolBackward(PoolGeometry pg) : geometry(pg) {}
    std::string name() const override { return "AvgPoolBackward"; }
    std::vector<Tensor> backward(const Tensor& grad) override;
};

// Calls fn(ih, iw) for each in-image position of window (p, q).
template <class Fn>
void for_each_in_window(const PoolGeometry& pg, std::int64_t p, std::int64_t q, Fn&& fn) {
    for (std::int64_t i = 0; i < pg.kernel; ++i) {
        const std::int64_t ih = p * pg.stride - pg.pad + i;
        if (ih < 0 || ih >= pg.H) continue;
        for (std::int64_t j = 0; j < pg.kernel; ++j) {
            const std::int64_t iw = q * pg.stride - pg.pad + j;
            if (iw >= 0 && iw < pg.W) fn(ih, iw);
        }
    }
}

std::vector<Tensor> AvgPoolBackward::backward(const Tensor& grad) {
    const Tensor g = grad.contiguous();
    Tensor dx = zeros(input_shape, g.dtype());
    const PoolGeometry& pg = geometry;
    dispatch_floating(g.dtype(), "avg_pool2d backward", [&]<class T>() {
        const T share = T(1) / static_cast<T>(pg.kernel * pg.kernel);
        const T* gy = g.data<T>();
        T* gx = dx.data<T>();
        parallel_for(pg.planes, 16, [&](std::int64_t first, std::int64_t last) {  // whole planes per thread
            for (std::int64_t plane = first; plane < last; ++plane)
                for (std::int64_t p = 0; p < pg.P; ++p)
                    for (std::int64_t q = 0; q < pg.Q; ++q) {
                        const T each = gy[(plane * pg.P + p) * pg.Q + q] * share;
                        T* in = gx + plane * pg.H * pg.W;
                        for_each_in_window(pg, p, q, [&](std::int64_t ih, std::int64_t iw) { in[ih * pg.W + iw] += each; });
                    }
        });
    });
    return {dx};
}

// The rows [first, last) of a window that starts at @p start, clipped to [0, size): the
// window's taps in the padding are dropped here, once, instead of tested one by one.
struct WindowRange {
    std::int64_t first, last;
};
WindowRange clip_window(std::int64_t start, std::int64_t kernel, std::int64_t size) {
    return {std::max<std::int64_t>(start, 0), std::min(start + kernel, size)};
}

// Max pooling of one plane: each output is the largest value of its window, and where it
// is. The comparison feeds a select, not a branch: which tap wins is data, and a branch on
// it is mispredicted about half the time (that made this loop, not the convolutions' GEMMs,
// the CNN's second-largest cost). The first tap starts the search, so a NaN in it stays,
// as before.
template <class T>
void max_pool_plane(const PoolGeometry& pg, const T* in, T* out, std::int32_t* where) {
    for (std::int64_t p = 0; p < pg.P; ++p) {
        const WindowRange rows = clip_window(p * pg.stride - pg.pad, pg.kernel, pg.H);
        for (std::int64_t q = 0; q < pg.Q; ++q) {
            const WindowRange cols = clip_window(q * pg.stride - pg.pad, pg.kernel, pg.W);
            std::int64_t best_at = rows.first * pg.W + cols.first;
            T best = in[best_at];
            for (std::int64_t ih = rows.first; ih < rows.last; ++ih)
                for (std::int64_t iw = cols.first; iw < cols.last; ++iw) {
                    const T value = in[ih * pg.W + iw];
                    const bool larger = value > best;
                    best = larger ? value : best;
                    best_at = larger ? ih * pg.W + iw : best_at;
                }
            out[p * pg.Q + q] = best;
            where[p * pg.Q + q] = static_cast<std::int32_t>(best_at);
        }
    }
}

// The same for the most common window, 2x2 with stride 2 and no padding (the CNN's):
// no window is clipped, so each output compares its four taps in a fixed order (the
// general loop's: row by row, the first of equals kept), with no loop around them, and
// the compiler can vectorise the loop over q: 1.7x the general loop on the CNN's pool1.
template <class T>
void max_pool_plane_2x2(const PoolGeometry& pg, const T* in, T* out, std::int32_t* where) {
    for (std::int64_t p = 0; p < pg.P; ++p) {
        const std::int64_t row = 2 * p * pg.W;  // the window's top row in the plane
        const T* top = in + row;
        const T* bottom = top + pg.W;
        T* out_row = out + p * pg.Q;
        std::int32_t* where_row = where + p * pg.Q;
        for (std::int64_t q = 0; q < pg.Q; ++q) {
            const std::int32_t at = static_cast<std::int32_t>(row + 2 * q);
            T best = top[2 * q];
            std::int32_t best_at = at;
            const auto consider = [&](T value, std::int32_t value_at) {
                const bool larger = value > best;
                best = larger ? value : best;
                best_at = larger ? value_at : best_at;
            };
            consider(top[2 * q + 1], at + 1);
            consider(bottom[2 * q], at + static_cast<std::int32_t>(pg.W));
            consider(bottom[2 * q + 1], at + static_cast<std::int32_t>(pg.W) + 1);
            out_row[q] = best;
            where_row[q] = best_at;
        }
    }
}

// Whether kernels/cpu/pool.hpp's AVX-512 loops run this pooling (of float32 planes): 2 x 2
// windows, stride 2, no padding, on a CPU that has them. Rows of any length, the CNN's 7
// and 14 outputs included, are whole masked vectors there.
bool vector_2x2(const PoolGeometry& pg) {
    return pg.kernel == 2 && pg.stride == 2 && pg.pad == 0 && kernels::has_max_pool_2x2();
}

// max_pool2d on the CPU: the outputs and where each maximum is; with @p relu_first (only
// where vector_2x2 holds, for float32) the pooling of relu(x), -1 where nothing was positive.
std::pair<Tensor, Tensor> max_pool2d_on_cpu(const PoolGeometry& pg, const Tensor& x, bool relu_first = false) {
    Tensor y = empty(pg.out_shape(x), x.dtype());
    Tensor argmax = empty(pg.out_shape(x), DType::Int32);
    dispatch_floating(x.dtype(), "max_pool2d", [&]<class T>() {
        std::int32_t* where = argmax.data<std::int32_t>();
        const T* input = x.data<T>();
        T* output = y.data<T>();
        if constexpr (std::is_same_v<T, float>) {
            if (vector_2x2(pg)) {
                parallel_for(pg.planes, 16, [&](std::int64_t first, std::int64_t last) {
                    for (std::int64_t plane = first; plane < last; ++plane)
                        kernels::max_pool_2x2_plane(input + plane * pg.H * pg.W, pg.H, pg.W,
                                                    output + plane * pg.P * pg.Q, where + plane * pg.P * pg.Q, relu_first);
                });
                return;
            }
        }
        // The portable loops (float64, and CPUs without AVX-512). Rows of fewer than 8
        // outputs are left to the general loop: there the vectorised loop's set-up cost
        // more than it saved, 1.1 ms against 0.9 ms on the CNN's pool2.
        const bool two_by_two = pg.kernel == 2 && pg.stride == 2 && pg.pad == 0 && pg.Q >= 8;
        parallel_for(pg.planes, 16, [&](std::int64_t first, std::int64_t last) {  // whole planes per thread
            for (std::int64_t plane = first; plane < last; ++plane)
                (two_by_two ? max_pool_plane_2x2<T> : max_pool_plane<T>)(pg, input + plane * pg.H * pg.W, output + plane * pg.P * pg.Q,
                               where + plane * pg.P * pg.Q);
        });
    });
    return {y, argmax};
}

// Records the pooling's backward (which scatters to @p argmax) for y = pool(x_in).
void record_max_pool(const Tensor& x_in, Tensor& y, const Tensor& argmax, const PoolGeometry& pg, bool after_relu) {
    if (!should_record({x_in})) return;
    auto node = std::make_shared<MaxPoolBackward>();
    node->argmax = save_for_backward(argmax);
    node->input_shape = x_in.shape();
    node->dims = pg.dims();
    node->after_relu = after_relu;
    record(y, node, {x_in});
}

}  // namespace

Tensor max_pool2d(const Tensor& x_in, std::int64_t kernel, std::int64_t stride, std::int64_t padding) {
    const OpTrace trace("max_pool2d");
    const PoolGeometry pg(x_in, kernel, stride, padding, "max_pool2d");
    const Tensor x = x_in.contiguous();
    auto [y, argmax] = device::on_device(x) ? device::max_pool2d(x, pg.dims()) : max_pool2d_on_cpu(pg, x);
    record_max_pool(x_in, y, argmax, pg, false);
    return trace.done({x_in}, y);
}

Tensor relu_max_pool2d(const Tensor& x_in, std::int64_t kernel, std::int64_t stride) {
    const PoolGeometry pg(x_in, kernel, stride, 0, "relu_max_pool2d");
    // The fused loop exists for float32 2 x 2 windows on the CPU (kernels/cpu/pool.hpp);
    // anything else runs the two ops, which is the definition.
    if (device::on_device(x_in) || x_in.dtype() != DType::Float32 || !vector_2x2(pg))
        return max_pool2d(relu(x_in), kernel, stride);
    const OpTrace trace("relu_max_pool2d");
    auto [y, argmax] = max_pool2d_on_cpu(pg, x_in.contiguous(), /*relu_first=*/true);
    record_max_pool(x_in, y, argmax, pg, true);
    return trace.done({x_in}, y);
}

Tensor avg_pool2d(const Tensor& x_in, std::int64_t kernel, std::int64_t stride, std::int64_t padding) {
    const OpTrace trace("avg_pool2d");
    const PoolGeometry pg(x_in, kernel, stride, padding, "avg_pool2d");
    check(!device::on_device(x_in), "avg_pool2d has no device kernel yet: run it on the CPU (x.cpu()), or use "
                                    "max_pool2d, which runs on " + x_in.device().str());
    const Tensor x = x_in.contiguous();
    Tensor y = empty(pg.out_shape(x), x.dtype());
    dispatch_floating(x.dtype(), "avg_pool2d", [&]<class T>() {
        const T* input = x.data<T>();
        T* output = y.data<T>();
        parallel_for(pg.planes, 16, [&](std::int64_t first, std::int64_t last) {  // whole planes per thread
            for (std::int64_t plane = first; plane < last; ++plane) {
                const T* in = input + plane * pg.H * pg.W;
                for (std::int64_t p = 0; p < pg.P; ++p)
                    for (std::int64_t q = 0; q < pg.Q; ++q) {
                        T sum = 0;
                        for_each_in_window(pg, p, q, [&](std::int64_t ih, std::int64_t iw) { sum += in[ih * pg.W + iw]; });
                        output[(plane * pg.P + p) * pg.Q + q] = sum / static_cast<T>(pg.kernel * pg.kernel);
                    }
            }
        });
    });
    if (should_record({x_in})) {
        auto node = std::make_shared<AvgPoolBackward>(pg);
        node->input_shape = x.shape();
        record(y, node, {x_in});
    }
    return trace.done({x_in}, y);
}

Tensor flatten(const Tensor& x) {
    check(x.dim() >= 1, "flatten: the input needs a batch dimension");
    return reshape(x, {x.shape()[0], -1});
}

}  // namespace gl
