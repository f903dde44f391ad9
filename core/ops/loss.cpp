// Log-softmax and cross-entropy, computed stably.
//
// softmax(x)_j = exp(x_j) / sum_k exp(x_k) overflows for large x, so we subtract the
// row maximum m first: log_softmax(x)_j = (x_j - m) - log(sum_k exp(x_k - m)).
// Cross-entropy fuses log-softmax with picking the target's log-probability; its
// gradient is the famous softmax(x) - onehot(target), divided by the batch size.
#include <cmath>
#include <type_traits>

#include "autograd/node.hpp"
#include "device/device_ops.hpp"
#include "kernels/cpu/elementwise.hpp"
#include "ops/op_trace.hpp"
#include "ops/ops.hpp"

namespace gl {
namespace {

/// Row-wise log-softmax of a contiguous [rows, cols] array (the shared forward).
template <class T>
void log_softmax_rows(const T* x, T* out, std::int64_t rows, std::int64_t cols) {
    if constexpr (std::is_same_v<T, float>) {
        kernels::log_softmax_rows(x, out, rows, cols);  // the tuned kernel (claim MEM-1 times it)
        return;
    }
    for (std::int64_t r = 0; r < rows; ++r) {
        const T* in = x + r * cols;
        T* o = out + r * cols;
        T m = in[0];
        for (std::int64_t j = 1; j < cols; ++j) m = std::max(m, in[j]);
        double total = 0.0;
        for (std::int64_t j = 0; j < cols; ++j) total += std::exp(static_cast<double>(in[j] - m));
        const T log_total = static_cast<T>(std::log(total));
        for (std::int64_t j = 0; j < cols; ++j) o[j] = (in[j] - m) - log_total;
    }
}

void check_2d(const Tensor& x, const char* op) {
    check(x.dim() == 2 && x.shape()[1] > 0,
          [&] { return std::string(op) + ": expects 2-d [batch, classes] input, got shape " + shape_str(x.shape()); });
}

struct LogSoftmaxBackward final : Node {
    Tensor output;  // log_softmax(x): exp(output) is softmax(x)
    std::string name() const override { return "LogSoftmaxBackward"; }
    std::vector<Tensor> backward(const Tensor& g) override {
        if (device::on_device(g)) return {device::log_softmax_backward(output, g)};
        // LAB 01 BEGIN: log-softmax backward
        // y = log_softmax(x): dL/dx_j = g_j - softmax(x)_j * sum_k g_k, row by row.
        const Tensor gc = g.contiguous();
        Tensor grad = empty(output.shape(), output.dtype());
        dispatch_floating(output.dtype(), "log_softmax backward", [&]<class T>() {
            const std::int64_t rows = output.shape()[0], cols = output.shape()[1];
            const T* y = output.data<T>();
            const T* gy = gc.data<T>();
            T* gx = grad.data<T>();
            for (std::int64_t r = 0; r < rows; ++r) {
                T row_sum = 0;
                for (std::int64_t j = 0; j < cols; ++j) row_sum += gy[r * cols + j];
                for (std::int64_t j = 0; j < cols; ++j)
                    gx[r * cols + j] = gy[r * cols + j] - std::exp(y[r * cols + j]) * row_sum;
            }
        });
        return {grad};
        // LAB 01 END
    }
};

struct CrossEntropyBackward final : Node {
    Tensor log_probs;  // log_softmax(logits), [B, C]
    Tensor targets;    // int32 [B]
    std::string name() const override { return "CrossEntropyBackward"; }
    std::vector<Tensor> backward(const Tensor& g) override {
        if (device::on_device(g)) return {device::cross_entropy_backward(log_probs, targets, g), Tensor()};
        // LAB 01 BEGIN: cross-entropy backward
        // L = -(1/B) sum_i log_softmax(x_i)[t_i], so dL/dx_ij = (softmax(x_i)_j - [j == t_i]) / B,
        // times the incoming scalar gradient g.
        Tensor grad = empty(log_probs.shape(), log_probs.dtype());
        dispatch_floating(log_probs.dtype(), "cross_entropy backward", [&]<class T>() {
            const std::int64_t rows = log_probs.shape()[0], cols = log_probs.shape()[1];
            const T scale = static_cast<T>(g.item()) / static_cast<T>(rows);
            const T* lp = log_probs.data<T>();
            const std::int32_t* t = targets.data<std::int32_t>();
            T* gx = grad.data<T>();
            for (std::int64_t r = 0; r < rows; ++r)
                for (std::int64_t j = 0; j < cols; ++j) {
                    const T onehot = j == t[r] ? T(1) : T(0);
                    gx[r * cols + j] = (std::exp(lp[r * cols + j]) - onehot) * scale;
                }
        });
        return {grad, Tensor()};
        // LAB 01 END
    }
};

// The same on a device: the targets are not read on the host (that would wait for the
// device every step); a target outside [0, C) makes the loss NaN instead.
Tensor cross_entropy_on_device(const Tensor& logits, const Tensor& targets) {
    const Tensor log_probs = device::log_softmax(logits);
    Tensor loss = device::nll_mean(log_probs, targets);
    if (should_record({logits})) {
        auto node = std::make_shared<CrossEntropyBackward>();
        node->log_probs = save_for_backward(log_probs);
        node->targets = save_for_backward(targets.contiguous());
        record(loss, node, {logits, targets});
    }
    return loss;
}

}  // namespace

Tensor log_softmax(const Tensor& x) {
    const OpTrace trace("log_softmax");
    check_2d(x, "log_softmax");
    Tensor out;
    if (device::on_device(x)) {
        out = device::log_softmax(x);
    } else {
        const Tensor xc = x.contiguous();
        out = empty(x.shape(), x.dtype());
        dispatch_floating(x.dtype(), "log_softmax", [&]<class T>() {
            log_softmax_rows(xc.data<T>(), out.data<T>(), x.shape()[0], x.shape()[1]);
        });
    }
    if (should_record({x})) {
        auto node = std::make_shared<LogSoftmaxBackward>();
        node->output = save_for_backward(out);
        record(out, node, {x});
    }
    return trace.done({x}, out);
}

Tensor cross_entropy(const Tensor& logits, const Tensor& targets) {
    const OpTrace trace("cross_entropy");
    check_2d(logits, "cross_entropy");
    check(targets.dtype() == DType::Int32 && targets.dim() == 1 &&
              targets.shape()[0] == logits.shape()[0],
          [&] {
              return "cross_entropy: targets must be int32 class indices of shape [" +
                     std::to_string(logits.shape()[0]) + "], got " + name_of(targets.dtype()) + " " +
                     shape_str(targets.shape());
          });
    check(logits.shape()[0] > 0, "cross_entropy: the batch is empty");
    check_same_device("cross_entropy", {&logits, &targets}, {"logits", "targets"});
    if (device::on_device(logits)) return cross_entropy_on_device(logits, targets);
    const Tensor tc = targets.contiguous();
    const std::int64_t rows = logits.shape()[0], cols = logits.shape()[1];
    const std::int32_t* t = tc.data<std::int32_t>();
    for (std::int64_t r = 0; r < rows; ++r)  // the message is built only for a bad target
        check(t[r] >= 0 && t[r] < cols, [&] {
            return "cross_entropy: target " + std::to_string(t[r]) + " at row " + std::to_string(r) +
                   " is not a class in [0, " + std::to_string(cols) + ")";
        });
    const Tensor xc = logits.contiguous();
    Tensor log_probs = empty(logits.shape(), logits.dtype());
    Tensor loss = dispatch_floating(logits.dtype(), "cross_entropy", [&]<class T>() {
        T* lp = log_probs.data<T>();
        log_softmax_rows(xc.data<T>(), lp, rows, cols);
        double total = 0.0;
        for (std::int64_t r = 0; r < rows; ++r) total -= lp[r * cols + t[r]];
        return scalar(total / static_cast<double>(rows), logits.dtype());
    });
    if (should_record({logits})) {
        auto node = std::make_shared<CrossEntropyBackward>();
        node->log_probs = save_for_backward(log_probs);
        node->targets = save_for_backward(tc);
        record(loss, node, {logits, targets});
    }
    return trace.done({logits, targets}, loss);
}

}  // namespace gl
