#include "data/dataloader.hpp"

#include <algorithm>
#include <ranges>
#include <thread>

#include "profiler/profiler.hpp"

namespace gl {

static_assert(std::input_iterator<EpochRange::iterator>);
static_assert(std::ranges::input_range<EpochRange>);

EpochRange::iterator::iterator(const EpochRange* range) : range_(range) { load(); }

void EpochRange::iterator::load() {
    if (pos_ < range_->plan_.size()) batch_ = range_->fetch(pos_);
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
                       std::vector<std::vector<std::size_t>> plan, const EpochSettings& settings)
    : dataset_(std::move(dataset)), plan_(std::move(plan)), settings_(settings) {
    check(dataset_ != nullptr, "EpochRange: the dataset is null");
}

EpochRange::~EpochRange() = default;
EpochRange::EpochRange(EpochRange&&) noexcept = default;
EpochRange& EpochRange::operator=(EpochRange&&) noexcept = default;

namespace {

/// The profiler's arrow id for batch @p b of an epoch: the same on the worker that makes
/// it and on the loop that takes it (the range itself may move while workers run).
std::uint64_t batch_flow(const Dataset& dataset, const EpochSettings& settings, std::size_t b) {
    return prof::flow_id(&dataset, (static_cast<std::uint64_t>(settings.seed.epoch) << 32) + b);
}

/// Batch @p b of a plan: gathered (and augmented, seeded per sample), then pinned if asked.
Batch make_planned_batch(const Dataset& dataset, const std::vector<std::size_t>& indices,
                         const EpochSettings& settings, std::size_t b) {
    prof::Scope scope(prof::Category::DataWork, "make_batch");
    if (scope.on()) prof::flow_start(batch_flow(dataset, settings, b));  // an arrow to the loop that takes it
    Batch batch = dataset.get_augmented_batch(indices, settings.seed);
    if (settings.pin) {
        batch.inputs = copy_to_pinned(batch.inputs, *settings.pin);
        batch.targets = copy_to_pinned(batch.targets, *settings.pin);
    }
    return batch;
}

}  // namespace

EpochRange::iterator EpochRange::begin() const {
    if (settings_.num_workers > 0) {
        prefetcher_.reset();  // a second begin() restarts the epoch
        // The workers share this range's plan and dataset through a copy of the range's
        // pieces, so the range can move while they run.
        auto plan = std::make_shared<const std::vector<std::vector<std::size_t>>>(plan_);
        MakeBatch make = [dataset = dataset_, plan, settings = settings_](std::size_t b) {
            return make_planned_batch(*dataset, (*plan)[b], settings, b);
        };
        prefetcher_ = std::make_unique<Prefetcher>(
            std::move(make), plan_.size(),
            PrefetchOptions{settings_.num_workers, settings_.capacity, settings_.timeout});
    }
    return iterator(this);
}

Batch EpochRange::make_batch(std::size_t b) const { return make_planned_batch(*dataset_, plan_.at(b), settings_, b); }

Batch EpochRange::fetch(std::size_t b) const {
    const auto start = std::chrono::steady_clock::now();
    const prof::Scope scope(prof::Category::DataWait, "next_batch");
    Batch batch;
    if (!prefetcher_) {
        try {
            batch = make_batch(b);
        } catch (const std::exception& e) {
            throw Error(where() + "batch " + std::to_string(b) + ": " + e.what());
        }
    } else {
        try {
            batch = prefetcher_->next();
        } catch (const std::exception& e) {
            throw Error(where() + e.what());
        }
        if (b + 1 == plan_.size()) stop();
    }
    data_wait_ += std::chrono::steady_clock::now() - start;
    if (scope.on()) prof::flow_finish(batch_flow(*dataset_, settings_, b));
    return batch;
}

std::string EpochRange::where() const { return "DataLoader: epoch " + std::to_string(settings_.seed.epoch) + ", "; }

void EpochRange::stop() const {
    if (prefetcher_) prefetcher_->stop();
}

std::size_t EpochRange::peak_ahead() const { return prefetcher_ ? prefetcher_->peak_ahead() : 0; }

std::size_t EpochRange::abandoned_workers() const { return prefetcher_ ? prefetcher_->abandoned_workers() : 0; }

namespace {

constexpr std::size_t kMaxWorkers = 256;

void check_options(const DataLoaderOptions& o, bool has_sampler) {
    check(o.batch_size > 0, "DataLoader: batch_size must be positive (got 0)");
    check(o.num_workers == kAutoWorkers || o.num_workers <= kMaxWorkers,
          "DataLoader: num_workers = " + std::to_string(o.num_workers) + " is more than " +
              std::to_string(kMaxWorkers) + " threads; use about one per core (or kAutoWorkers to measure)");
    check(o.prefetch_factor > 0, "DataLoader: prefetch_factor must be at least 1 (got 0)");
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
    if (options_.num_workers == kAutoWorkers) {
        const std::size_t cores = std::max(1u, std::thread::hardware_concurrency());
        options_.num_workers = autotune_workers(*this, 2 * cores, std::min<std::size_t>(num_batches(), 8)).best;
    }
}

std::size_t DataLoader::num_batches() const {
    const std::size_t n = sampler_->num_indices(dataset_->size());
    const std::size_t b = options_.batch_size;
    return options_.drop_last ? n / b : (n + b - 1) / b;
}

std::vector<std::vector<std::size_t>> DataLoader::batch_indices(std::uint64_t epoch) const {
    const std::vector<std::size_t> order = sampler_->indices(dataset_->size(), epoch);
    check(order.size() == sampler_->num_indices(dataset_->size()), [&] {
        return "DataLoader: the sampler returned " + std::to_string(order.size()) + " indices but announced " +
               std::to_string(sampler_->num_indices(dataset_->size())) +
               "; a Sampler's indices() and num_indices() must agree";
    });
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
    EpochSettings settings;
    settings.seed = AugmentSeed{options_.seed, epoch};
    settings.num_workers = options_.num_workers;
    settings.capacity = std::max<std::size_t>(1, options_.num_workers * options_.prefetch_factor);
    settings.timeout = std::chrono::milliseconds(options_.timeout_ms);
    if (options_.pin_memory)
        settings.pin = options_.pinned_provider ? options_.pinned_provider : &default_pinned_provider();
    return EpochRange(dataset_, batch_indices(epoch), settings);
}

DataLoader DataLoader::with_workers(std::size_t num_workers) const {
    DataLoader copy = *this;
    copy.options_.num_workers = num_workers;
    return copy;
}

namespace {

/// Batches per second of the first @p batches batches of epoch 0 of @p loader.
double measure_throughput(const DataLoader& loader, std::size_t batches) {
    const auto start = std::chrono::steady_clock::now();
    std::size_t made = 0;
    {
        const EpochRange range = loader.epoch(0);
        for (auto it = range.begin(); made < batches && it != range.end(); ++it) ++made;
    }  // leaving early stops the workers
    const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
    return static_cast<double>(made) / std::max(took.count(), 1e-9);
}

}  // namespace

WorkerTuning autotune_workers(const DataLoader& loader, std::size_t max_workers, std::size_t batches) {
    check(batches > 0, "autotune_workers: needs at least 1 batch per trial");
    WorkerTuning tuning;
    // Raise the count while throughput grows; a count that is clearly slower than the best
    // so far (past the cores, threads only compete) ends the search, as tf.data's AUTOTUNE
    // stops growing a parallelism that no longer pays.
    for (std::size_t w = 0; w <= max_workers; ++w) {
        const double rate = measure_throughput(loader.with_workers(w), batches);
        tuning.batches_per_second.push_back(rate);
        const double best = tuning.batches_per_second[tuning.best];
        if (rate > best) tuning.best = w;
        else if (rate < 0.9 * best) break;
    }
    return tuning;
}

}  // namespace gl
