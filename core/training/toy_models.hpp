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

/// A network whose depth depends on the data: it applies a residual step while the
/// mean activation is below a threshold (at most 4 times). Define-by-run autograd
/// records whatever path the data took.
class DataDependentNet final : public nn::Module {
public:
    /// @param dims input features; @param rng seeds the weights.
    DataDependentNet(std::int64_t dims, Rng& rng);
    /// Runs the data-dependent number of residual steps (recorded in last_depth).
    Tensor forward(const Tensor& x) override;
    /// "DataDependentNet".
    std::string describe() const override { return "DataDependentNet"; }
    int last_depth = 0;  ///< how many residual steps the last forward took

private:
    std::shared_ptr<nn::Linear> in_, step_, out_;
};

/// What training DataDependentNet gave.
struct ToyTrainResult {
    double first_loss;  ///< loss at the first step
    double last_loss;   ///< loss at the last step
    double accuracy;    ///< training accuracy at the end
    int min_depth;      ///< fewest residual steps any forward took
    int max_depth;      ///< most residual steps any forward took
};
/// Trains DataDependentNet on 128 blob points with SGD (momentum 0.9) for @p steps steps.
ToyTrainResult train_data_dependent_net(std::uint64_t seed, int steps = 60);

}  // namespace gl::training
