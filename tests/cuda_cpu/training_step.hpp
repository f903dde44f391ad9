// One training step through a chosen GEMM kernel, for tests that show a kernel runs inside
// the framework: a forward pass (x W^T: a transposed operand), the loss, and a backward
// pass (more transposes) all go through the GEMM registry, and autograd does not know
// which kernel ran.
#pragma once

#include <cmath>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "base/rng.hpp"
#include "kernels/gemm.hpp"
#include "nn/module.hpp"
#include "ops/ops.hpp"

namespace gl::test {

/// Makes @p name the default GEMM kernel for the lifetime of this object.
class ScopedGemm {
public:
    explicit ScopedGemm(const std::string& name) : saved_(kernels::default_gemm().name) {
        kernels::set_default_gemm(name);
    }
    ~ScopedGemm() { kernels::set_default_gemm(saved_); }
    ScopedGemm(const ScopedGemm&) = delete;
    ScopedGemm& operator=(const ScopedGemm&) = delete;

private:
    std::string saved_;
};

/// The loss, then every parameter's gradient, after one forward and backward pass of a
/// small SimpleNet (50-128-10, batch 37: no size a multiple of a tile) with kernel @p kernel.
inline std::vector<std::vector<float>> loss_and_gradients(const std::string& kernel) {
    ScopedGemm use(kernel);
    Rng rng(5);
    auto net = nn::make_simple_net(rng, 50);
    const Tensor x = randn({37, 50}, rng);
    std::vector<std::int32_t> labels(37);
    for (std::size_t i = 0; i < labels.size(); ++i) labels[i] = static_cast<std::int32_t>(i % 10);
    const Tensor loss = cross_entropy((*net)(x), from_vector<std::int32_t>(labels, {37}));
    loss.backward();
    std::vector<std::vector<float>> out = {{static_cast<float>(loss.item())}};
    for (const Tensor& p : net->parameters()) out.push_back(p.grad().to_vector<float>());
    return out;
}

/// Where the loss and gradients @p got (as loss_and_gradients returns them, computed with
/// @p what) differ from a step with the naive loop (the first difference), or "" when the
/// loss and every gradient agree.
inline std::string step_differences(const std::string& what, const std::vector<std::vector<float>>& got) {
    const auto naive = loss_and_gradients("naive");
    if (got.size() != naive.size()) return "with " + what + ", the step gave the wrong number of gradients";
    for (std::size_t t = 0; t < naive.size(); ++t) {
        if (got[t].size() != naive[t].size())
            return "with " + what + ", a gradient has the wrong size (parameter " + std::to_string(t) + ")";
        for (std::size_t i = 0; i < naive[t].size(); ++i)
            if (!(std::fabs(got[t][i] - naive[t][i]) <= 1e-5 + 1e-4 * std::fabs(naive[t][i]))) {
                std::ostringstream out;
                out << "with " << what << ", "
                    << (t == 0 ? "the loss" : "the gradient of parameter " + std::to_string(t - 1))
                    << " at " << i << " is " << got[t][i] << ", with the naive loop " << naive[t][i];
                return out.str();
            }
    }
    return "";
}

/// Where a training step with kernel @p kernel differs from one with the naive loop.
inline std::string step_differences(const std::string& kernel) {
    return step_differences("GEMM kernel " + kernel, loss_and_gradients(kernel));
}

}  // namespace gl::test
