#include "data/dataloader.hpp"

#include <algorithm>
#include <ranges>

namespace gl {

static_assert(std::input_iterator<EpochRange::iterator>);
static_assert(std::ranges::input_range<EpochRange>);

EpochRange::iterator::iterator(const EpochRange* range) : range_(range) { load(); }

void EpochRange::iterator::load() {
    if (pos_ < range_->plan_.size()) batch_ = range_->dataset_->get_batch(range_->plan_[pos_]);
    else batch_ = Batch{};  // let the last batch's memory go as soon as the loop ends
}

EpochRange::iterator& EpochRange::iterator::operator++() {
    check(range_ != nullptr && pos_ < range_->plan_.size(),
          "EpochRange::iterator: incremented past the end of the epoch");
    ++pos_;
    load();
    return *this;
}

bool EpochRange::iterator::operator==(std::default_sentinel_t) const {
    return range_ == nullptr || pos_ >= range_->plan_.size();
}

EpochRange::EpochRange(std::shared_ptr<const Dataset> dataset,
                       std::vector<std::vector<std::size_t>> plan)
    : dataset_(std::move(dataset)), plan_(std::move(plan)) {
    check(dataset_ != nullptr, "EpochRange: the dataset is null");
}

namespace {

void check_options(const DataLoaderOptions& o, bool has_sampler) {
    check(o.batch_size > 0, "DataLoader: batch_size must be positive (got 0)");
    check(o.num_workers == 0,
          "DataLoader: num_workers = " + std::to_string(o.num_workers) +
              " is not yet supported (worker threads come in a later version); use "
              "num_workers = 0 to make batches on the calling thread");
    check(o.prefetch_batches > 0, "DataLoader: prefetch_batches must be at least 1 (got 0)");
    check(!(has_sampler && o.shuffle),
          "DataLoader: give either shuffle = true or a sampler, not both (the sampler decides "
          "the order; use RandomSampler for a shuffled one)");
}

std::shared_ptr<const Sampler> default_sampler(const DataLoaderOptions& o) {
    if (o.shuffle) return std::make_shared<RandomSampler>(o.seed);
    return std::make_shared<SequentialSampler>();
}

}  // namespace

DataLoader::DataLoader(std::shared_ptr<const Dataset> dataset, const DataLoaderOptions& options,
                       std::shared_ptr<const Sampler> sampler)
    : dataset_(std::move(dataset)), options_(options), sampler_(std::move(sampler)) {
    check(dataset_ != nullptr, "DataLoader: the dataset is null");
    check_options(options_, sampler_ != nullptr);
    if (!sampler_) sampler_ = default_sampler(options_);
    check(dataset_->size() > 0, "DataLoader: the dataset is empty; there is nothing to load");
    const std::size_t n = sampler_->num_indices(dataset_->size());
    check(n > 0, "DataLoader: the sampler gives no indices for a dataset of " +
                     std::to_string(dataset_->size()) + " examples");
    check(num_batches() > 0,
          "DataLoader: drop_last with batch_size " + std::to_string(options_.batch_size) +
              " and only " + std::to_string(n) + " examples per epoch leaves no batch at all; "
              "lower batch_size or set drop_last = false");
}

std::size_t DataLoader::num_batches() const {
    const std::size_t n = sampler_->num_indices(dataset_->size());
    const std::size_t b = options_.batch_size;
    return options_.drop_last ? n / b : (n + b - 1) / b;
}

std::vector<std::vector<std::size_t>> DataLoader::batch_indices(std::uint64_t epoch) const {
    const std::vector<std::size_t> order = sampler_->indices(dataset_->size(), epoch);
    check(order.size() == sampler_->num_indices(dataset_->size()),
          "DataLoader: the sampler returned " + std::to_string(order.size()) +
              " indices but announced " + std::to_string(sampler_->num_indices(dataset_->size())) +
              "; a Sampler's indices() and num_indices() must agree");
    std::vector<std::vector<std::size_t>> plan(num_batches());
    for (std::size_t b = 0; b < plan.size(); ++b) {
        const std::size_t first = b * options_.batch_size;
        const std::size_t last = std::min(first + options_.batch_size, order.size());
        plan[b].assign(order.begin() + static_cast<std::ptrdiff_t>(first),
                       order.begin() + static_cast<std::ptrdiff_t>(last));
    }
    return plan;
}

EpochRange DataLoader::epoch(std::uint64_t epoch) const {
    return EpochRange(dataset_, batch_indices(epoch));
}

}  // namespace gl
