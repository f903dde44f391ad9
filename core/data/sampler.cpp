#include "data/sampler.hpp"

#include <numeric>

#include "base/rng.hpp"

namespace gl {

std::vector<std::size_t> SequentialSampler::indices(std::size_t dataset_size, std::uint64_t) const {
    std::vector<std::size_t> order(dataset_size);
    std::iota(order.begin(), order.end(), std::size_t{0});
    return order;
}

std::vector<std::size_t> RandomSampler::indices(std::size_t dataset_size, std::uint64_t epoch) const {
    // Seeding with seed + epoch directly would make (seed 1, epoch 0) replay (seed 0,
    // epoch 1). Drawing a base from the seed first keeps runs with nearby seeds apart,
    // and adding the epoch to it gives every epoch of a run its own stream.
    const std::uint64_t base = Rng(seed_).next_u64();
    Rng rng(base + epoch);
    return rng.permutation(dataset_size);
}

}  // namespace gl
