#include "graph/fused_loop.hpp"

#include <algorithm>
#include <cmath>

#include "base/error.hpp"

namespace gl::graph {
namespace {

// Applies one step to a chunk of @p n elements: dst[j] = op(a[j], b[j]).
void apply(EwOp op, const float* a, const float* b, float* dst, std::int64_t n) {
    switch (op) {
        case EwOp::Add: for (std::int64_t j = 0; j < n; ++j) dst[j] = a[j] + b[j]; break;
        case EwOp::Sub: for (std::int64_t j = 0; j < n; ++j) dst[j] = a[j] - b[j]; break;
        case EwOp::Mul: for (std::int64_t j = 0; j < n; ++j) dst[j] = a[j] * b[j]; break;
        case EwOp::Div: for (std::int64_t j = 0; j < n; ++j) dst[j] = a[j] / b[j]; break;
        case EwOp::Neg: for (std::int64_t j = 0; j < n; ++j) dst[j] = -a[j]; break;
        case EwOp::Relu: for (std::int64_t j = 0; j < n; ++j) dst[j] = a[j] > 0.0f ? a[j] : 0.0f; break;
        case EwOp::Sqrt: for (std::int64_t j = 0; j < n; ++j) dst[j] = std::sqrt(a[j]); break;
        case EwOp::ReluGrad: for (std::int64_t j = 0; j < n; ++j) dst[j] = b[j] > 0.0f ? a[j] : 0.0f; break;
    }
}

// Copies elements [start, start + n) of a broadcast input (element e reads src[e % numel])
// into a register, stepping the index instead of dividing for every element.
void load_broadcast(const float* src, std::int64_t src_numel, std::int64_t start, std::int64_t n, float* reg) {
    if (src_numel == 1) {
        std::fill(reg, reg + n, src[0]);
        return;
    }
    std::int64_t k = start % src_numel;
    for (std::int64_t j = 0; j < n; ++j) {
        reg[j] = src[k];
        if (++k == src_numel) k = 0;
    }
}

}  // namespace

EwOp ew_op(const std::string& op) {
    if (op == "add") return EwOp::Add;
    if (op == "sub") return EwOp::Sub;
    if (op == "mul") return EwOp::Mul;
    if (op == "div") return EwOp::Div;
    if (op == "neg") return EwOp::Neg;
    if (op == "relu") return EwOp::Relu;
    if (op == "sqrt") return EwOp::Sqrt;
    if (op == "relu_grad") return EwOp::ReluGrad;
    throw Error("graph: '" + op + "' is not an element-wise op");
}

void run_fused_loop(const FusedLoop& loop, LoopScratch& scratch) {
    const auto n_inputs = static_cast<std::int64_t>(loop.inputs.size());
    // Where each register's chunk is: an input of the loop's shape is read where it lies;
    // a broadcast input and every step's result live in the scratch chunks.
    const float** regs = scratch.where.data();
    const auto slot = [&](std::int64_t r) { return scratch.chunks.data() + r * kChunk; };
    for (std::int64_t start = 0; start < loop.numel; start += kChunk) {
        const std::int64_t n = std::min(kChunk, loop.numel - start);
        // Read every input once, from memory into the chunk's registers...
        for (std::int64_t i = 0; i < n_inputs; ++i) {
            const float* src = loop.inputs[static_cast<std::size_t>(i)];
            const std::int64_t numel = loop.input_numel[static_cast<std::size_t>(i)];
            if (numel == loop.numel) {
                regs[i] = src + start;
            } else {
                load_broadcast(src, numel, start, n, slot(i));
                regs[i] = slot(i);
            }
        }
        // ...compute the whole chain in cache...
        for (std::size_t k = 0; k < loop.steps.size(); ++k) {
            const EwStep& s = loop.steps[k];
            const std::int64_t dst = n_inputs + static_cast<std::int64_t>(k);
            apply(s.op, regs[s.a], regs[s.b], slot(dst), n);
            regs[dst] = slot(dst);
        }
        // ...and write each output once (after every read of the chunk: in place is safe).
        for (std::size_t o = 0; o < loop.outputs.size(); ++o)
            std::copy(regs[loop.output_registers[o]], regs[loop.output_registers[o]] + n, loop.outputs[o] + start);
    }
}

void LoopScratch::fit(const FusedLoop& loop) {
    const std::size_t registers = loop.inputs.size() + loop.steps.size();
    if (where.size() < registers) where.resize(registers);
    if (chunks.size() < registers * static_cast<std::size_t>(kChunk)) chunks.resize(registers * static_cast<std::size_t>(kChunk));
}

std::vector<FusedStep> single_step_program(const std::string& op, int n_inputs) {
    FusedStep s;
    s.op = op;
    for (int i = 0; i < n_inputs; ++i) s.args.push_back(i);
    return {s};
}

}  // namespace gl::graph
