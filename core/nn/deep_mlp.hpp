/// @file
/// @brief A deep multilayer perceptron: the model of the checkpointing experiments.
///
/// Owns: make_deep_mlp. Each hidden layer is one module (a Sequential of Linear and
/// ReLU), so checkpoint_sequential can cut between any two layers.
#pragma once

#include <memory>

#include "nn/module.hpp"

namespace gl::nn {

/// A Sequential of @p layers blocks Linear-ReLU (the first from @p in features, the rest
/// @p width to @p width) and a Linear head to @p classes: @p layers + 1 modules.
std::shared_ptr<Sequential> make_deep_mlp(Rng& rng, std::int64_t layers, std::int64_t width,
                                          std::int64_t in, std::int64_t classes = 10);

}  // namespace gl::nn
