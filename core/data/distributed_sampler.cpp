// DistributedSampler: each worker's share of an epoch (lab 08).
#include <numeric>
#include <string>

#include "base/error.hpp"
#include "data/sampler.hpp"

namespace gl {

DistributedSampler::DistributedSampler(std::size_t num_replicas, std::size_t rank, bool shuffle, std::uint64_t seed,
                                       bool drop_last)
    : num_replicas_(num_replicas), rank_(rank), shuffle_(shuffle), seed_(seed), drop_last_(drop_last) {
    check(num_replicas > 0, "DistributedSampler: num_replicas must be positive");
    check(rank < num_replicas, "DistributedSampler: rank " + std::to_string(rank) + " is not below num_replicas " +
                                   std::to_string(num_replicas));
}

std::size_t DistributedSampler::num_indices(std::size_t dataset_size) const {
    return drop_last_ ? dataset_size / num_replicas_ : (dataset_size + num_replicas_ - 1) / num_replicas_;
}

std::vector<std::size_t> DistributedSampler::indices(std::size_t dataset_size, std::uint64_t epoch) const {
    const std::size_t per_rank = num_indices(dataset_size);
    const std::size_t total = per_rank * num_replicas_;
    // LAB 08 BEGIN: distributed sampler
    // 1. The epoch's order, the same on every rank: RandomSampler(seed_).indices(...) when
    //    shuffle_, else 0..dataset_size-1.
    // 2. Make it exactly `total` long: with padding, append its first elements again
    //    (wrapping around as often as needed, for datasets smaller than num_replicas_);
    //    with drop_last_, cut it.
    // 3. This rank takes positions rank_, rank_ + num_replicas_, rank_ + 2 num_replicas_, ...
    std::vector<std::size_t> order;
    if (shuffle_) {
        order = RandomSampler(seed_).indices(dataset_size, epoch);
    } else {
        order.resize(dataset_size);
        std::iota(order.begin(), order.end(), std::size_t{0});
    }
    for (std::size_t i = 0; order.size() < total; ++i) order.push_back(order[i % dataset_size]);
    order.resize(total);
    std::vector<std::size_t> mine;
    mine.reserve(per_rank);
    for (std::size_t i = rank_; i < total; i += num_replicas_) mine.push_back(order[i]);
    return mine;
    // LAB 08 END
}

}  // namespace gl
