#include "ops/op_trace.hpp"

#include <utility>

namespace gl {
namespace {

thread_local OpObserver observer;
thread_local int depth = 0;  // how many traced ops are on this thread's call stack

}  // namespace

OpObserver set_op_observer(OpObserver next) { return std::exchange(observer, std::move(next)); }

OpTrace::OpTrace(const char* op) : op_(op) { ++depth; }

OpTrace::~OpTrace() { --depth; }

const Tensor& OpTrace::done(std::initializer_list<Tensor> inputs, const Tensor& output) const {
    if (depth == 1 && observer) observer(TracedOp{op_, inputs, output});
    return output;
}

bool OpTrace::active() const { return depth == 1 && static_cast<bool>(observer); }

}  // namespace gl
