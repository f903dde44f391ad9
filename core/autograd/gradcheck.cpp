#include "autograd/gradcheck.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "autograd/grad_mode.hpp"
#include "ops/ops.hpp"

namespace gl {
namespace {

using Fn = std::function<Tensor(const std::vector<Tensor>&)>;

void check_float64(const std::vector<Tensor>& inputs) {
    for (const auto& x : inputs)
        check(x.dtype() == DType::Float64,
              "gradcheck: inputs must be float64 (float32 finite differences are too noisy)");
}

// Fresh leaves with the inputs' values, so neither the inputs nor their gradients change.
std::vector<Tensor> fresh_leaves(const std::vector<Tensor>& inputs) {
    std::vector<Tensor> leaves;
    for (const auto& x : inputs) {
        Tensor leaf = x.detach().clone();
        leaf.set_requires_grad(x.requires_grad());
        leaves.push_back(leaf);
    }
    return leaves;
}

// The fixed random weights that reduce an output of @p shape to the checked scalar.
Tensor projection_for(const Shape& shape, const GradcheckOptions& options) {
    Rng rng(options.seed);
    return rand_uniform(shape, 0.5, 1.5, rng, DType::Float64);
}

// The scalar whose gradient we check: sum(fn(inputs) * projection).
double projected_value(const Fn& fn, const std::vector<Tensor>& inputs, const Tensor& projection) {
    NoGradGuard no_grad;
    const Tensor y = fn(inputs);
    return sum(mul(y, projection)).item();
}

}  // namespace

std::vector<Tensor> analytic_gradients(const Fn& fn, const std::vector<Tensor>& inputs,
                                       const GradcheckOptions& options) {
    check_float64(inputs);
    std::vector<Tensor> leaves = fresh_leaves(inputs);
    const Tensor y = fn(leaves);
    sum(mul(y, projection_for(y.shape(), options))).backward();
    std::vector<Tensor> grads;
    for (const auto& leaf : leaves) grads.push_back(leaf.requires_grad() ? leaf.grad() : Tensor());
    return grads;
}

GradcheckResult compare_with_finite_differences(const Fn& fn, const std::vector<Tensor>& inputs,
                                                const std::vector<Tensor>& analytic,
                                                const GradcheckOptions& options) {
    check_float64(inputs);
    std::vector<Tensor> leaves = fresh_leaves(inputs);
    Shape out_shape;
    {
        NoGradGuard no_grad;
        out_shape = fn(leaves).shape();
    }
    const Tensor projection = projection_for(out_shape, options);
    GradcheckResult result;
    result.ok = true;
    std::ostringstream worst;
    if (analytic.size() != leaves.size()) {
        result.ok = false;
        result.message = "backward gave " + std::to_string(analytic.size()) + " gradients for " +
                         std::to_string(leaves.size()) + " inputs";
        return result;
    }
    for (std::size_t i = 0; i < leaves.size(); ++i) {
        if (!leaves[i].requires_grad()) continue;
        const Tensor& got_grad = analytic[i];
        if (got_grad.defined() && (got_grad.shape() != leaves[i].shape() || got_grad.dtype() != DType::Float64)) {
            result.ok = false;
            worst.str("");
            worst << "input " << i << ": the gradient has shape " << got_grad.str()
                  << ", not the input's shape and float64";
            break;
        }
        const Tensor dense = got_grad.defined() ? got_grad.contiguous() : Tensor();
        double* x = leaves[i].data<double>();
        for (std::int64_t j = 0; j < leaves[i].numel(); ++j) {
            const double saved = x[j];
            x[j] = saved + options.eps;
            const double plus = projected_value(fn, leaves, projection);
            x[j] = saved - options.eps;
            const double minus = projected_value(fn, leaves, projection);
            x[j] = saved;
            const double numeric = (plus - minus) / (2 * options.eps);
            const double got = dense.defined() ? dense.data<double>()[j] : 0.0;
            const double abs_err = std::abs(got - numeric);
            const double rel_err = abs_err / std::max(1.0, std::abs(numeric));
            ++result.checked;
            // NaN compares false: a NaN gradient is as wrong as the worst.
            if (!(abs_err <= result.max_abs_error)) {
                result.max_abs_error = abs_err;
                worst.str("");
                worst << "input " << i << " element " << j << ": backward gave " << got
                      << ", finite differences give " << numeric;
                if (!dense.defined()) worst << " (backward returned no gradient for this input)";
            }
            result.max_rel_error = std::max(result.max_rel_error, rel_err);
            if (!(abs_err <= options.atol + options.rtol * std::abs(numeric))) result.ok = false;
        }
    }
    result.message = (result.ok ? "gradients match; largest difference at " : "gradients differ; worst at ") +
                     worst.str();
    return result;
}

GradcheckResult gradcheck(const Fn& fn, const std::vector<Tensor>& inputs, const GradcheckOptions& options) {
    return compare_with_finite_differences(fn, inputs, analytic_gradients(fn, inputs, options), options);
}

}  // namespace gl
