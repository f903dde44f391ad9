/// @file
/// @brief Checking analytic gradients against central finite differences.
///
/// The test every op's backward must pass (claim FW-1): perturb each input element by
/// +-eps, and compare (f(x+eps) - f(x-eps)) / 2eps with what backward() computed.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "base/rng.hpp"
#include "tensor/tensor.hpp"

namespace gl {

/// What gradcheck found.
struct GradcheckResult {
    bool ok = false;             ///< every element within tolerance
    double max_abs_error = 0.0;  ///< largest |analytic - numeric|
    double max_rel_error = 0.0;  ///< largest |analytic - numeric| / max(1, |numeric|)
    std::int64_t checked = 0;    ///< number of input elements perturbed
    std::string message;         ///< where the worst mismatch was, for test output
};

/// Options for gradcheck.
struct GradcheckOptions {
    double eps = 1e-6;    ///< finite-difference step
    double atol = 1e-6;   ///< absolute tolerance
    double rtol = 1e-4;   ///< relative tolerance
    std::uint64_t seed = 0;  ///< seeds the random projection of the output
};

/// The analytic gradients gradcheck compares: backward() of sum(fn(inputs) * w), with the
/// fixed random projection w of @p options.seed; one tensor per input (undefined for an
/// input that needs no gradient or that backward() did not reach).
std::vector<Tensor> analytic_gradients(const std::function<Tensor(const std::vector<Tensor>&)>& fn,
                                       const std::vector<Tensor>& inputs, const GradcheckOptions& options = {});

/// Compares @p analytic (as analytic_gradients returns them, possibly computed by other
/// code, e.g. a student's, in another process) with central finite differences of @p fn.
GradcheckResult compare_with_finite_differences(const std::function<Tensor(const std::vector<Tensor>&)>& fn,
                                                const std::vector<Tensor>& inputs,
                                                const std::vector<Tensor>& analytic,
                                                const GradcheckOptions& options = {});

/// Checks the gradients of @p fn at @p inputs (float64 tensors; those that require grad
/// are checked). A non-scalar output y is reduced to sum(y * w) with fixed random w, so
/// every output element's gradient path is exercised.
GradcheckResult gradcheck(const std::function<Tensor(const std::vector<Tensor>&)>& fn,
                          const std::vector<Tensor>& inputs, const GradcheckOptions& options = {});

}  // namespace gl
