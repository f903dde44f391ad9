// Lab 10's bad pipelines (pipelines_l10.hpp). Each run trains SimpleNet-sized models on
// synthetic data for a few steps under the profiler: a warmup step thrown away, then the
// steps the diagnosis reads. The metrics that decide "the remedy helps" are counted where
// the lecture's remedy is about bytes or synchronisations (peak memory, communication
// bytes per sample, host syncs per step) and timed where it is about time (seconds per
// sample of a tiny batch, step time of a slow loader).
#include "pipelines_l10.hpp"

#include <chrono>
#include <thread>

#include "base/error.hpp"
#include "data/dataloader.hpp"
#include "dist/parallel_training.hpp"
#include "dist/thread_comm.hpp"
#include "memory/tracking_allocator.hpp"
#include "nn/deep_mlp.hpp"
#include "nn/module.hpp"
#include "training/trainer.hpp"

namespace gl::claims {

namespace {

constexpr std::int64_t kFeatures = 784;
constexpr std::int64_t kClasses = 10;

// N random examples of 784 features, classes i % 10.
std::shared_ptr<const Dataset> synthetic_data(std::size_t n) {
    Rng rng(7);
    std::vector<std::int32_t> targets(n);
    for (std::size_t i = 0; i < n; ++i) targets[i] = static_cast<std::int32_t>(i % kClasses);
    return std::make_shared<TensorDataset>(randn({static_cast<std::int64_t>(n), kFeatures}, rng),
                                           from_vector(targets, {static_cast<std::int64_t>(n)}), kClasses);
}

// A dataset whose every example costs @p work of loading before it is ready. The work is a
// wait (what decoding a file from slow storage or a heavy augmentation costs the thread
// that does it), so that the remedy's effect, workers doing it in parallel, does not hang
// on how many idle cores a shared machine happens to have.
class SlowDataset final : public ExampleDataset {
public:
    SlowDataset(std::size_t n, std::chrono::microseconds work) : n_(n), work_(work) {}
    std::size_t size() const override { return n_; }
    Shape example_shape() const override { return {kFeatures}; }
    std::int64_t num_classes() const override { return kClasses; }
    std::optional<Example> get_example(std::size_t index, Rng& rng) const override {
        std::this_thread::sleep_for(work_);
        return Example{randn({kFeatures}, rng), static_cast<std::int32_t>(index % kClasses)};
    }

private:
    std::size_t n_;
    std::chrono::microseconds work_;
};

// Options of one profiled single-process run.
struct LoopSettings {
    std::size_t batch = 32;
    std::size_t steps = 6;  // the first is the warmup
    std::size_t workers = 0;
    Device device = kCpu;
    bool read_loss_every_step = false;
};

// Trains SimpleNet over @p data for settings.steps steps with the profiler on.
prof::Trace profile_training(const std::shared_ptr<const Dataset>& data, const LoopSettings& s,
                             prof::Schedule schedule) {
    Rng rng(1);
    auto net = nn::make_simple_net(rng);
    net->to(s.device);
    auto optimizer = training::make_optimizer("sgd", net->parameters(), 0.01);
    DataLoaderOptions lo;
    lo.batch_size = s.batch;
    lo.num_workers = s.workers;
    DataLoader loader(data, lo);
    prof::Profiler profiler({.schedule = schedule});
    profiler.start();
    training::train_epoch(*net, *optimizer, loader, 1, nullptr, {s.device, s.read_loss_every_step});
    profiler.stop();
    return profiler.trace();
}

prof::Schedule warmup_then(std::size_t steps) { return {.wait = 0, .warmup = 1, .active = static_cast<int>(steps) - 1}; }

double mean_step_seconds(const prof::StepSummary& s) { return s.steps > 0 ? s.step_ns / 1e9 / s.steps : 0.0; }

PipelineRun finish(PipelineRun run, std::string config, std::string metric) {
    run.config = std::move(config);
    run.metric = std::move(metric);
    run.summary = prof::summarize(run.trace);
    run.diagnosis = prof::diagnose(run.summary, run.rules);
    run.step_seconds = mean_step_seconds(run.summary);
    return run;
}

PipelineRun tiny_batch(bool remedied) {
    LoopSettings s;
    s.batch = remedied ? 64 : 1;
    s.steps = remedied ? 8 : 16;
    PipelineRun run;
    run.trace = profile_training(synthetic_data(s.batch * s.steps), s, warmup_then(s.steps));
    run = finish(std::move(run), "SimpleNet, batch " + std::to_string(s.batch), "seconds per sample");
    run.value = run.step_seconds / static_cast<double>(s.batch);
    return run;
}

PipelineRun slow_loading(bool remedied) {
    LoopSettings s;
    s.batch = 32;
    s.steps = 16;  // past the batches the workers make ahead, into their steady state
    s.workers = remedied ? 4 : 0;
    PipelineRun run;
    auto data = std::make_shared<SlowDataset>(s.batch * s.steps, std::chrono::microseconds(250));
    run.trace = profile_training(data, s, warmup_then(s.steps));
    run = finish(std::move(run),
                 "SimpleNet, batch 32, 250 us of loading work per example, " + std::to_string(s.workers) + " loader workers",
                 "seconds per step");
    run.value = run.step_seconds;
    return run;
}

// The cap: what a small device would give this model. The default batch (1024) needs more.
constexpr std::int64_t kMemoryCap = 4 << 20;

PipelineRun memory_cap(bool remedied) {
    LoopSettings s;
    s.batch = remedied ? 128 : 1024;
    s.steps = 2;
    auto data = synthetic_data(s.batch * s.steps);
    // Every byte from model creation on is counted, so the timeline starts empty: the
    // profiler records from the first allocation (no warmup: nothing may be missed).
    memory::TrackingAllocator tracker;
    memory::DefaultAllocatorScope use(tracker);
    PipelineRun run;
    run.rules.memory_cap_bytes = kMemoryCap;
    {
        prof::Profiler profiler({.schedule = {.wait = 0, .warmup = 0, .active = static_cast<int>(s.steps)}});
        profiler.start();
        Rng rng(1);
        auto net = nn::make_simple_net(rng);
        auto optimizer = training::make_optimizer("adam", net->parameters(), 1e-3);
        DataLoader loader(data, {.batch_size = s.batch});
        training::train_epoch(*net, *optimizer, loader, 1);
        profiler.stop();
        run.trace = profiler.trace();
    }
    run = finish(std::move(run), "SimpleNet with Adam, batch " + std::to_string(s.batch) + ", a 4 MiB memory cap",
                 "peak bytes");
    run.value = static_cast<double>(run.summary.peak_memory);
    return run;
}

PipelineRun data_parallel(bool remedied) {
    constexpr int kRanks = 2;
    const std::size_t batch = remedied ? 64 : 8;
    const std::size_t steps = 5;
    auto data = synthetic_data(batch * steps);
    dist::ParallelFitOptions o;
    o.parallel = remedied ? "ddp" : "dp";
    o.fit.epochs = 1;
    o.fit.batch_size = batch;
    o.fit.optimizer = "sgd";
    o.fit.lr = 0.01;
    // Wide and shallow: 1.2 M parameters and little compute per example, so moving whole
    // models every step is expensive next to computing them.
    const dist::ModelFactory wide = [] {
        Rng rng(1);
        return std::shared_ptr<nn::Module>(nn::make_deep_mlp(rng, 2, 768, kFeatures, kClasses));
    };
    PipelineRun run;
    prof::Profiler profiler({.schedule = warmup_then(steps)});
    profiler.start();
    dist::run_threads(kRanks, [&](dist::Communicator& comm) { dist::fit_parallel(comm, wide, data, nullptr, o); });
    profiler.stop();
    run.trace = profiler.trace();
    run = finish(std::move(run),
                 std::string(remedied ? "DistributedDataParallel" : "DataParallel") + ", 2 ranks (threads), MLP 784-768-768-10, global batch " +
                     std::to_string(batch),
                 "communication bytes per sample");
    const double samples = static_cast<double>(run.summary.steps) * static_cast<double>(batch);
    run.value = samples > 0 ? run.summary.communication_bytes / samples : 0.0;
    return run;
}

PipelineRun host_sync(bool remedied) {
    LoopSettings s;
    s.batch = 32;
    s.steps = 5;
    s.device = kCudaCpu;
    s.read_loss_every_step = !remedied;
    PipelineRun run;
    run.trace = profile_training(synthetic_data(s.batch * s.steps), s, warmup_then(s.steps));
    run = finish(std::move(run),
                 std::string("SimpleNet on the CUDA CPU runtime, batch 32, the loss read ") +
                     (remedied ? "once, after the epoch" : "every step (.item())"),
                 "host syncs per step");
    run.value = run.summary.steps > 0 ? static_cast<double>(run.summary.syncs) / run.summary.steps : 0.0;
    return run;
}

}  // namespace

const std::vector<BadPipeline>& bad_pipelines() {
    static const std::vector<BadPipeline> all = {BadPipeline::TinyBatch, BadPipeline::SlowLoading,
                                                 BadPipeline::MemoryCap, BadPipeline::DataParallel,
                                                 BadPipeline::HostSync};
    return all;
}

std::string pipeline_name(BadPipeline p) {
    switch (p) {
        case BadPipeline::TinyBatch: return "tiny-batch";
        case BadPipeline::SlowLoading: return "slow-loading";
        case BadPipeline::MemoryCap: return "memory-cap";
        case BadPipeline::DataParallel: return "data-parallel";
        case BadPipeline::HostSync: return "host-sync";
    }
    return "?";
}

BadPipeline parse_pipeline(const std::string& name) {
    std::string names;
    for (const BadPipeline p : bad_pipelines()) {
        if (pipeline_name(p) == name) return p;
        names += (names.empty() ? "" : ", ") + pipeline_name(p);
    }
    throw Error("unknown pipeline '" + name + "'; choose one of: " + names);
}

prof::Problem planted_problem(BadPipeline p) {
    switch (p) {
        case BadPipeline::TinyBatch: return prof::Problem::LowUtilization;
        case BadPipeline::SlowLoading: return prof::Problem::DataLoading;
        case BadPipeline::MemoryCap: return prof::Problem::OutOfMemory;
        case BadPipeline::DataParallel: return prof::Problem::Communication;
        case BadPipeline::HostSync: return prof::Problem::HostSync;
    }
    return prof::Problem::ComputeBound;
}

PipelineRun run_pipeline(BadPipeline p, bool remedied) {
    switch (p) {
        case BadPipeline::TinyBatch: return tiny_batch(remedied);
        case BadPipeline::SlowLoading: return slow_loading(remedied);
        case BadPipeline::MemoryCap: return memory_cap(remedied);
        case BadPipeline::DataParallel: return data_parallel(remedied);
        case BadPipeline::HostSync: return host_sync(remedied);
    }
    throw Error("run_pipeline: unknown pipeline");
}

}  // namespace gl::claims
