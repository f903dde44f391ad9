/// @file
/// @brief The hook that lets a tracer see each op as the define-by-run code calls it.
///
/// Owns: a per-thread observer that is told, for every top-level op call, the op's name,
/// its input tensors and its output. An op that calls other ops inside (mean calls sum
/// and mul) is reported once, as itself. Knows nothing about graphs: core/graph/ installs
/// the observer to capture a static graph (torch.jit.trace's mechanism).
#pragma once

#include <functional>
#include <initializer_list>

#include "profiler/profiler.hpp"
#include "tensor/tensor.hpp"

namespace gl {

/// One op call as a tracer sees it.
struct TracedOp {
    const char* op;                       ///< the op's name ("matmul", "add", "relu", ...)
    std::initializer_list<Tensor> inputs;  ///< its tensor inputs, in order
    const Tensor& output;                  ///< its result
};

/// Called after every top-level op while installed.
using OpObserver = std::function<void(const TracedOp&)>;
/// Installs @p observer for this thread (an empty one removes it); returns the previous one.
OpObserver set_op_observer(OpObserver observer);

/// Marks one op call: construct it first thing in an op, call done() with the result.
/// Only the outermost op on the stack reports, so ops built from ops appear as one.
/// While the profiler records, it is also a profiler scope (category op_forward) whose
/// work (flops, bytes) and input shapes done() fills in.
class OpTrace {
public:
    /// Starts the op called @p op.
    explicit OpTrace(const char* op);
    ~OpTrace();
    OpTrace(const OpTrace&) = delete;
    OpTrace& operator=(const OpTrace&) = delete;
    /// Reports @p output computed from @p inputs (to the observer, when one is installed
    /// and this op is the outermost); returns @p output.
    const Tensor& done(std::initializer_list<Tensor> inputs, const Tensor& output) const;
    /// True when done() will report (an observer is installed and this op is outermost):
    /// lets an op build a tensor for a number argument only when someone is watching.
    bool active() const;

private:
    void describe(std::initializer_list<Tensor> inputs, const Tensor& output) const;
    const char* op_;
    mutable prof::Scope scope_;
};

}  // namespace gl
