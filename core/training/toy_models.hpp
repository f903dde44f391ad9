/// @file
/// @brief Toy data and a network with data-dependent control flow (claim FW-1).
///
/// Shared by the unit tests, the graded tests and the claims report.
#pragma once

#include <memory>

#include "base/rng.hpp"
#include "nn/module.hpp"
#include "ops/ops.hpp"

namespace gl::training {

/// Two Gaussian blobs, labelled 0 and 1 (almost linearly separable).
struct Blobs {
    Tensor x;  ///< [n, dims] float32
    Tensor y;  ///< [n] int32
};
/// @p n points in @p dims dimensions, alternating labels, reproducible from @p seed.
Blobs make_blobs(std::int64_t n, std::int64_t dims, std::uint64_t seed);

/// XOR-like data: x uniform in [-1, 1]^2, label 1 when x0 * x1 > 0. No linear model can
/// separate it, so a network has to learn a hidden representation.
Blobs make_xor(std::int64_t n, std::uint64_t seed);

/// A network whose depth depends on the data: the number of residual steps (1 to 4) is
/// computed from the batch's mean squared input, so different batches run different
/// graphs. Define-by-run autograd records whatever path the data took.
class DataDependentNet final : public nn::Module {
public:
    /// @param dims input features; @param rng seeds the weights.
    DataDependentNet(std::int64_t dims, Rng& rng);
    /// Runs the data-dependent number of residual steps (recorded in last_depth).
    Tensor forward(const Tensor& x) override;
    /// "DataDependentNet".
    std::string describe() const override { return "DataDependentNet"; }
    int last_depth = 0;  ///< how many residual steps the last forward took
    /// The depth this network will use for input @p x (1..4), computed from the data.
    static int depth_for(const Tensor& x);

private:
    std::shared_ptr<nn::Linear> in_, step_, out_;
};

/// What training DataDependentNet gave.
struct ToyTrainResult {
    double first_loss;  ///< loss on the whole set before training
    double last_loss;   ///< loss on the whole set after training
    double accuracy;    ///< training accuracy at the end
    int min_depth;      ///< fewest residual steps any training batch took
    int max_depth;      ///< most residual steps any training batch took
};
/// Trains DataDependentNet on 256 XOR points in mini-batches of 16 with SGD (momentum 0.9)
/// for @p steps steps; losses and accuracy are measured on all 256 points.
ToyTrainResult train_data_dependent_net(std::uint64_t seed, int steps = 300);

}  // namespace gl::training
