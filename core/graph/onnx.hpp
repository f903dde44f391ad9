/// @file
/// @brief ONNX export and import of inference graphs: the ahead-of-time deployment path
/// (claim DEPLOY-1).
///
/// Owns: the mapping between the IR's ops (ir.hpp) and ONNX operators, the weights as
/// ONNX initializers, and the checks an imported file must pass before it runs. The
/// file format itself is ONNX's protobuf schema (Debian's libonnx-dev, onnx/onnx-ml.proto
/// compiled by protoc), read and written by the protobuf library; this file only maps.
/// An imported graph runs on the same executor as a captured one (executor.hpp), with no
/// autograd involved.
///
/// Supported ONNX operators (opset 13..21, float32 only): Gemm (alpha = beta = 1),
/// MatMul (2-d), Add, Sub, Mul, Div (trailing-dimension broadcasting), Neg, Relu, Sqrt,
/// Transpose (2-d), LogSoftmax (last axis of a 2-d input).
#pragma once

#include <cstdint>
#include <string>

#include "graph/ir.hpp"

namespace gl::graph {

/// The opset this exporter writes (ONNX's default domain).
inline constexpr std::int64_t kOnnxOpset = 13;
/// Largest ONNX file import_onnx accepts: a bound so that a hostile length field cannot
/// make the reader allocate without limit.
inline constexpr std::int64_t kOnnxMaxBytes = std::int64_t{1} << 30;
/// Largest number of elements in one tensor (input, initializer or intermediate) of an
/// imported graph.
inline constexpr std::int64_t kOnnxMaxElements = std::int64_t{1} << 28;

/// Serializes the inference graph @p g (from capture_forward, before fusion) as an ONNX
/// ModelProto: Inputs become graph inputs, Parameters and Constants initializers with
/// their numbers, and each node one ONNX node (a fused_elementwise node is written as
/// its steps). Throws gl::Error naming the first op ONNX export does not support (the
/// training ops: reduce_to, mean, cross_entropy, ...).
std::string export_onnx(const Graph& g, const std::string& producer = "gradlab");

/// Writes export_onnx(@p g) to @p path; throws gl::Error when the file cannot be written.
void save_onnx(const Graph& g, const std::string& path);

/// Parses the ONNX model in @p bytes into a verified IR graph: graph inputs become Inputs,
/// initializers Parameters (holding their numbers), nodes IR nodes. A symbolic input
/// dimension (dim_param, such as a batch "N") takes @p batch. Throws gl::Error saying
/// what is wrong and what to do: bytes that are not an ONNX model (corrupt or
/// truncated), a missing opset, unsupported operators (all of them named), non-float32
/// tensors, shapes that do not fit, tensors over kOnnxMaxElements.
Graph import_onnx(const std::string& bytes, std::int64_t batch = 1);

/// Reads @p path (at most kOnnxMaxBytes) and import_onnx()s it; errors name the file.
Graph load_onnx(const std::string& path, std::int64_t batch = 1);

}  // namespace gl::graph
