#include "autograd/gradcheck.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "autograd/grad_mode.hpp"

namespace gl {
namespace {

// The scalar whose gradient we check: sum(fn(inputs) * projection), summed here in
// plain loops so that checking an op does not run other ops.
double projected_value(const std::function<Tensor(const std::vector<Tensor>&)>& fn,
                       const std::vector<Tensor>& inputs, const Tensor& projection) {
    NoGradGuard no_grad;
    const Tensor y = to_dtype(fn(inputs), DType::Float64);  // contiguous float64
    check(y.shape() == projection.shape(), "gradcheck: the function's output changed shape from " +
                                               shape_str(projection.shape()) + " to " + shape_str(y.shape()));
    const double* values = y.data<double>();
    const double* weights = projection.data<double>();
    double total = 0.0;
    for (std::int64_t i = 0; i < y.numel(); ++i) total += values[i] * weights[i];
    return total;
}

}  // namespace

GradcheckResult gradcheck(const std::function<Tensor(const std::vector<Tensor>&)>& fn,
                          const std::vector<Tensor>& inputs, const GradcheckOptions& options) {
    for (const auto& x : inputs)
        check(x.dtype() == DType::Float64,
              "gradcheck: inputs must be float64 (float32 finite differences are too noisy)");
    std::vector<Tensor> leaves;
    for (const auto& x : inputs) {
        Tensor leaf = x.detach().clone();
        leaf.set_requires_grad(x.requires_grad());
        leaves.push_back(leaf);
    }
    // Analytic gradients through backward().
    const Tensor y = fn(leaves);
    Rng rng(options.seed);
    const Tensor projection = rand_uniform(y.shape(), 0.5, 1.5, rng, DType::Float64);
    // The gradient of sum(y * projection) is backward from y seeded with the projection.
    y.backward(to_dtype(projection, y.dtype()));

    GradcheckResult result;
    result.ok = true;
    std::ostringstream worst;
    for (std::size_t i = 0; i < leaves.size(); ++i) {
        if (!leaves[i].requires_grad()) continue;
        const Tensor analytic = leaves[i].grad();
        double* x = leaves[i].data<double>();
        for (std::int64_t j = 0; j < leaves[i].numel(); ++j) {
            const double saved = x[j];
            x[j] = saved + options.eps;
            const double plus = projected_value(fn, leaves, projection);
            x[j] = saved - options.eps;
            const double minus = projected_value(fn, leaves, projection);
            x[j] = saved;
            const double numeric = (plus - minus) / (2 * options.eps);
            const double got = analytic.defined() ? analytic.data<double>()[j] : 0.0;
            const double abs_err = std::abs(got - numeric);
            const double rel_err = abs_err / std::max(1.0, std::abs(numeric));
            ++result.checked;
            if (abs_err > result.max_abs_error) {
                result.max_abs_error = abs_err;
                worst.str("");
                worst << "input " << i << " element " << j << ": backward gave " << got
                      << ", finite differences give " << numeric;
                if (!analytic.defined()) worst << " (backward returned no gradient for this input)";
            }
            result.max_rel_error = std::max(result.max_rel_error, rel_err);
            if (abs_err > options.atol + options.rtol * std::abs(numeric)) result.ok = false;
        }
    }
    result.message = (result.ok ? "gradients match; largest difference at " : "gradients differ; worst at ") +
                     worst.str();
    return result;
}

}  // namespace gl
