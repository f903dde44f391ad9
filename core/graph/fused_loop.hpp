/// @file
/// @brief The one generic element-wise loop: runs a short op list over registers.
///
/// Owns: the math of the IR's element-wise ops and the loop that applies a program of
/// them to whole tensors in chunks. An unfused element-wise node is a program of one
/// step; a fused node is a program of many, so the fused version reads each input from
/// memory once and writes each output once, whatever the chain's length (claim JIT-1).
/// Knows nothing about graphs beyond FusedStep.
#pragma once

#include <cstdint>
#include <vector>

#include "graph/ir.hpp"

namespace gl::graph {

/// The element-wise ops as numbers, so the loop switches on an int, not a string.
enum class EwOp : std::uint8_t { Add, Sub, Mul, Div, Neg, Relu, Sqrt, ReluGrad };

/// The EwOp of an element-wise op name; throws gl::Error for any other name.
EwOp ew_op(const std::string& op);

/// One program step with the op resolved.
struct EwStep {
    EwOp op;        ///< what to compute
    int a = 0;      ///< first register read
    int b = 0;      ///< second register read (unused for unary ops)
};

/// A compiled loop: where its inputs and outputs live and what to compute.
struct FusedLoop {
    std::vector<EwStep> steps;          ///< the program; step k defines register n_inputs + k
    std::vector<const float*> inputs;   ///< register i < n_inputs reads inputs[i]
    std::vector<std::int64_t> input_numel;  ///< broadcast: element e reads inputs[i][e % numel]
    std::vector<float*> outputs;        ///< where each output goes
    std::vector<int> output_registers;  ///< which register each output takes
    std::int64_t numel = 0;             ///< elements of the loop
};

/// Elements handled per chunk: the registers of a chunk stay in L1 cache.
inline constexpr std::int64_t kChunk = 256;

/// The working space of run_fused_loop: a chunk per register and where each register's
/// chunk is. Size it once (fit) for the largest loop; running allocates nothing.
struct LoopScratch {
    std::vector<float> chunks;        ///< kChunk floats per register
    std::vector<const float*> where;  ///< per register: its chunk (in chunks, or an input)
    /// Grows the space to hold @p loop's registers.
    void fit(const FusedLoop& loop);
};

/// Runs @p loop over all its elements in chunks of kChunk; @p scratch must fit it. An
/// output may be the same memory as an input (an in-place update): each chunk is read
/// before it is written.
void run_fused_loop(const FusedLoop& loop, LoopScratch& scratch);

/// The program of one unfused element-wise @p op over @p n_inputs inputs.
std::vector<FusedStep> single_step_program(const std::string& op, int n_inputs);

}  // namespace gl::graph
