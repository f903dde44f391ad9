/// @file
/// @brief A catalogue of small functions, one or more per op, whose gradients gradcheck
/// verifies: shared by the unit tests and the claims report (FW-1).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "tensor/tensor.hpp"

namespace gl {

/// One gradient check: a function of some float64 inputs of given shapes.
struct OpCase {
    std::string name;                                              ///< e.g. "add_broadcast"
    std::function<Tensor(const std::vector<Tensor>&)> fn;          ///< the function checked
    std::vector<Shape> shapes;                                     ///< one shape per input
};

/// Every differentiable op, with broadcasting and odd shapes where they apply.
std::vector<OpCase> standard_op_cases();

/// Random float64 inputs for @p c (uniform in [-2, 2), seeded by position), requiring grad.
std::vector<Tensor> make_op_case_inputs(const OpCase& c, std::uint64_t seed = 100);

}  // namespace gl
