#include "ops/op_trace.hpp"

#include <algorithm>
#include <string>
#include <string_view>
#include <utility>

namespace gl {
namespace {

thread_local OpObserver observer;
thread_local int depth = 0;  // how many traced ops are on this thread's call stack

}  // namespace

OpObserver set_op_observer(OpObserver next) { return std::exchange(observer, std::move(next)); }

OpTrace::OpTrace(const char* op) : op_(op), scope_(prof::Category::OpForward, op) { ++depth; }

OpTrace::~OpTrace() { --depth; }

const Tensor& OpTrace::done(std::initializer_list<Tensor> inputs, const Tensor& output) const {
    if (depth == 1 && observer) observer(TracedOp{op_, inputs, output});
    if (scope_.on()) describe(inputs, output);
    return output;
}

// The op's work for the profiler's table: bytes read and written, and flops by a simple
// model (a matmul's 2*M*K*N; one flop per output element for everything else).
void OpTrace::describe(std::initializer_list<Tensor> inputs, const Tensor& output) const {
    const auto nbytes = [](const Tensor& t) { return static_cast<double>(t.numel()) * static_cast<double>(size_of(t.dtype())); };
    double bytes = output.defined() ? nbytes(output) : 0.0;
    std::string shapes;
    for (const Tensor& t : inputs) {
        if (!t.defined()) continue;
        bytes += nbytes(t);
        if (!prof::recording_shapes()) continue;
        if (!shapes.empty()) shapes += ' ';
        shapes += shape_str(t.shape());
    }
    // Multiply-adds per output element: a matmul's K; a convolution's (C / groups) kh kw,
    // the weight's size per output channel (weight [K, C / groups, kh, kw], input 1).
    const std::string_view op(op_);
    const bool matmul = op == "matmul" && inputs.size() >= 1 && inputs.begin()->dim() >= 1;
    const bool conv = op == "conv2d" && inputs.size() >= 2 && (inputs.begin() + 1)->dim() == 4;
    double inner = 1.0;
    if (matmul) inner = static_cast<double>(inputs.begin()->shape().back());
    if (conv) {
        const Tensor& w = *(inputs.begin() + 1);
        inner = static_cast<double>(w.numel()) / static_cast<double>(std::max<std::int64_t>(w.shape()[0], 1));
    }
    const double flops = (matmul || conv ? 2.0 : 1.0) * inner * static_cast<double>(output.defined() ? output.numel() : 0);
    scope_.set_work(flops, bytes);
    if (!shapes.empty()) scope_.set_shapes(std::move(shapes));
}

bool OpTrace::active() const { return depth == 1 && static_cast<bool>(observer); }

}  // namespace gl
