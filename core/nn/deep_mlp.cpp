#include "nn/deep_mlp.hpp"

#include "base/error.hpp"

namespace gl::nn {

std::shared_ptr<Sequential> make_deep_mlp(Rng& rng, std::int64_t layers, std::int64_t width, std::int64_t in,
                                          std::int64_t classes) {
    check(layers >= 1, "make_deep_mlp: needs at least one hidden layer");
    auto net = std::make_shared<Sequential>();
    for (std::int64_t i = 0; i < layers; ++i) {
        auto block = std::make_shared<Sequential>();
        block->add(std::make_shared<Linear>(i == 0 ? in : width, width, rng));
        block->add(std::make_shared<ReLU>());
        net->add(block);
    }
    net->add(std::make_shared<Linear>(width, classes, rng));
    return net;
}

}  // namespace gl::nn
