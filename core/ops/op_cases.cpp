#include "ops/op_cases.hpp"

#include "base/rng.hpp"
#include "ops/ops.hpp"

namespace gl {

std::vector<OpCase> standard_op_cases() {
    using V = const std::vector<Tensor>&;
    const Tensor targets = from_vector<std::int32_t>({1, 0, 2, 2}, {4});
    return {
        {"add", [](V v) { return v[0] + v[1]; }, {{3, 4}, {3, 4}}},
        {"add_broadcast", [](V v) { return v[0] + v[1]; }, {{3, 4}, {4}}},
        {"sub_broadcast", [](V v) { return v[0] - v[1]; }, {{3, 1}, {1, 5}}},
        {"mul_broadcast", [](V v) { return v[0] * v[1]; }, {{2, 3, 4}, {3, 1}}},
        {"scale", [](V v) { return v[0] * -2.5; }, {{3, 3}}},
        {"matmul", [](V v) { return matmul(v[0], v[1]); }, {{3, 5}, {5, 2}}},
        {"matmul_odd", [](V v) { return matmul(v[0], v[1]); }, {{7, 1}, {1, 4}}},
        {"matmul_transposed", [](V v) { return matmul(t(v[0]), t(v[1])); }, {{5, 3}, {2, 5}}},
        {"sum", [](V v) { return sum(v[0]); }, {{3, 4}}},
        {"sum_dims", [](V v) { return sum(v[0], {0, 2}); }, {{2, 3, 4}}},
        {"mean_keepdim", [](V v) { return mean(v[0], {1}, true); }, {{3, 4}}},
        {"reshape", [](V v) { return reshape(v[0], {2, -1}); }, {{3, 4}}},
        {"transpose", [](V v) { return transpose(v[0], 0, 1) * 1.0; }, {{3, 4}}},
        {"expand", [](V v) { return expand(v[0], {3, 4}) * 1.0; }, {{3, 1}}},
        {"contiguous", [](V v) { return t(v[0]).contiguous(); }, {{3, 4}}},
        // relu is checked away from its kink at 0, where finite differences are meaningless.
        {"relu", [](V v) { return relu(v[0] * v[0] + 0.1) - relu(-(v[0] * v[0]) - 0.1); }, {{3, 4}}},
        {"log_softmax", [](V v) { return log_softmax(v[0]); }, {{4, 3}}},
        {"cross_entropy", [targets](V v) { return cross_entropy(v[0], targets); }, {{4, 3}}},
    };
}

std::vector<Tensor> make_op_case_inputs(const OpCase& c, std::uint64_t seed) {
    std::vector<Tensor> inputs;
    for (std::size_t i = 0; i < c.shapes.size(); ++i) {
        Rng rng(seed + i);
        inputs.push_back(rand_uniform(c.shapes[i], -2.0, 2.0, rng, DType::Float64).set_requires_grad());
    }
    return inputs;
}

}  // namespace gl
