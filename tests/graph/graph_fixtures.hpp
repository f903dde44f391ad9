// Shared by the graph tests and Lab 13's graded tests: small hand-built graphs with known
// answers, random batches, and SimpleNet trained eagerly for comparison.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "graph/capture.hpp"
#include "graph/ir.hpp"
#include "nn/module.hpp"

namespace gl::graph::fixtures {

/// A float32 Input or Parameter value of @p shape called @p name (no data bound).
int add_input(Graph& g, const std::string& name, const Shape& shape, ValueKind kind = ValueKind::Input);

/// A batch of @p rows random inputs of @p features features and int32 labels < @p classes.
struct Batch {
    Tensor x;        ///< [rows, features]
    Tensor targets;  ///< [rows]
};
Batch random_batch(std::int64_t rows, std::int64_t features, std::int64_t classes, std::uint64_t seed);

/// SimpleNet(in, hidden, classes) with weights from @p seed.
std::shared_ptr<nn::Sequential> simple_net(std::uint64_t seed, std::int64_t in = 64, std::int64_t hidden = 32,
                                           std::int64_t classes = 10);

/// Trains @p model eagerly with optim::Adam for @p steps steps on batches random_batch(
/// rows, ..., seed + step); returns the losses.
std::vector<double> train_eager(nn::Module& model, const AdamSettings& adam, int steps, std::int64_t rows,
                                std::int64_t features, std::int64_t classes, std::uint64_t seed);

/// How many nodes of @p g run @p op.
int count_ops(const Graph& g, const std::string& op);

/// The largest |a - b| over two models' parameters (same architecture).
double max_parameter_difference(nn::Module& a, nn::Module& b);

}  // namespace gl::graph::fixtures
