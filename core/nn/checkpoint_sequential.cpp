#include "nn/checkpoint_sequential.hpp"

#include <cmath>

#include "autograd/checkpoint.hpp"
#include "base/error.hpp"

namespace gl::nn {

std::size_t sqrt_segments(std::size_t modules) {
    // LAB 07 BEGIN: the sqrt(n) segment policy
    // k segments hold about k + n/k layers of activations, smallest at k = sqrt(n).
    // Return sqrt(n) rounded to the nearest integer, at least 1 (0 for no modules).
    if (modules == 0) return 0;
    const auto k = static_cast<std::size_t>(std::llround(std::sqrt(static_cast<double>(modules))));
    return k < 1 ? 1 : k;
    // LAB 07 END
}

std::vector<std::pair<std::size_t, std::size_t>> segment_bounds(std::size_t modules, std::size_t segments) {
    // LAB 07 BEGIN: split n modules into k segments
    // Clamp k to [1, n]. Each segment gets n / k modules, and the first n % k segments
    // one more, so 7 modules in 3 segments are [0,3) [3,5) [5,7).
    std::vector<std::pair<std::size_t, std::size_t>> bounds;
    if (modules == 0) return bounds;
    const std::size_t k = std::min(std::max<std::size_t>(segments, 1), modules);
    std::size_t begin = 0;
    for (std::size_t s = 0; s < k; ++s) {
        const std::size_t length = modules / k + (s < modules % k ? 1 : 0);
        bounds.emplace_back(begin, begin + length);
        begin += length;
    }
    return bounds;
    // LAB 07 END
}

Tensor checkpoint_sequential(Sequential& model, std::size_t segments, const Tensor& x) {
    check(segments > 0, "checkpoint_sequential: the number of segments must be at least 1");
    Tensor h = x;
    for (const auto& [begin, end] : segment_bounds(model.size(), segments)) {
        // The segment's modules run here now and again during backward.
        auto run_segment = [&model, begin = begin, end = end](const Tensor& input) {
            Tensor out = input;
            for (std::size_t i = begin; i < end; ++i) out = model.at(i).forward(out);
            return out;
        };
        h = checkpoint(CheckpointFn1(run_segment), h);
    }
    return h;
}

}  // namespace gl::nn
