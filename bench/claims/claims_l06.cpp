// Lab 06 claims: DATA-1 (prefetching hides loading: a step costs about max(load / workers,
// compute)), DATA-2 (num_workers about the cores), DATA-4 (the augmentation pipeline, and
// its equivalence with torchvision). The pipeline is real: Fashion-MNIST written out as
// JPEG files, decoded with libjpeg-turbo and augmented per sample. DATA-3 (pinned
// memory) belongs to the device lab.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <sstream>

#include "claims.hpp"
#include "verdicts_l06.hpp"
#include "data/dataloader.hpp"
#include "data/image_folder.hpp"
#include "data/mnist_files.hpp"
#include "nn/deep_mlp.hpp"
#include "ops/ops.hpp"
#include "optim/optimizer.hpp"
#include "parallel/thread_pool.hpp"
#include "testkit/torchvision_peer.hpp"

namespace gl::claims {
namespace {

std::string workers_text(int n) { return std::to_string(n) + (n == 1 ? " worker" : " workers"); }

namespace fs = std::filesystem;
using clock_type = std::chrono::steady_clock;
constexpr std::size_t kBatch = 64;

double seconds_since(clock_type::time_point start) {
    return std::chrono::duration<double>(clock_type::now() - start).count();
}

/// The training recipe's augmentation for 28 x 28 grey images.
std::shared_ptr<const Transform> train_transform() {
    return std::make_shared<Compose>(std::vector<std::shared_ptr<const Transform>>{
        std::make_shared<RandomResizedCrop>(28, 28, 0.5f, 1.0f), std::make_shared<RandomHorizontalFlip>(),
        std::make_shared<ColorJitter>(0.4f, 0.4f, 0.0f, 0.0f),
        std::make_shared<Normalize>(std::vector<float>{0.286f}, std::vector<float>{0.353f})});
}

/// Fashion-MNIST's first @p count training images as JPEG files in a temporary folder,
/// removed when this goes away.
struct JpegFolder {
    fs::path root;
    std::shared_ptr<ImageFolder> data;
    JpegFolder(const Context& ctx, std::size_t count) {
        root = fs::temp_directory_path() / ("gradlab_data_claims_" + std::to_string(::getpid()));
        fs::remove_all(root);
        const fs::path mnist = ctx.data_dir.empty() ? default_fashion_mnist_dir() : fs::path(ctx.data_dir);
        export_image_folder(mnist, root, ImageFormat::Jpeg, count);
        ImageFolderOptions options;
        options.transform = train_transform();
        data = std::make_shared<ImageFolder>(root, options);
    }
    ~JpegFolder() {
        std::error_code ignored;
        fs::remove_all(root, ignored);
    }
    JpegFolder(const JpegFolder&) = delete;
    JpegFolder& operator=(const JpegFolder&) = delete;
};

/// An MLP on the flattened image whose training step is the "accelerator's" work.
struct Model {
    std::shared_ptr<nn::Sequential> net;
    std::unique_ptr<optim::SGD> opt;
    Model(std::int64_t width, std::uint64_t seed) {
        Rng rng(seed);
        net = nn::make_deep_mlp(rng, 2, width, 28 * 28, 10);
        opt = std::make_unique<optim::SGD>(net->parameters(), 0.01);
    }
    void step(const Batch& batch) {
        const Tensor x = reshape(batch.inputs, {batch.inputs.size(0), 28 * 28});
        opt->zero_grad();
        cross_entropy((*net)(x), batch.targets).backward();
        opt->step();
    }
};

/// Calls @p use on the first @p batches batches of @p range (fewer if the epoch is
/// shorter) and returns how many it saw; asks for no batch past the last one used.
template <class Use>
std::size_t first_batches(const EpochRange& range, std::size_t batches, Use use) {
    std::size_t n = 0;
    for (auto it = range.begin(); it != range.end();) {
        use(*it);
        if (++n == batches) break;
        ++it;
    }
    return n;
}

/// Seconds per batch of loading alone (the load L on the calling thread without workers;
/// the inverse of the throughput with them).
double load_seconds(const DataLoader& loader, std::size_t batches) {
    const auto start = clock_type::now();
    const EpochRange range = loader.epoch(0);
    const std::size_t n = first_batches(range, batches, [](const Batch&) {});
    return seconds_since(start) / static_cast<double>(n);
}

/// Seconds per batch over @p epochs whole epochs, the workers stopped and started again
/// at each epoch's end as a training run does (a longer run than one epoch: a rate of
/// ~1000 batches/s needs a few thousand batches to stand out of a shared machine's noise).
double seconds_per_batch_over_epochs(const DataLoader& loader, std::uint64_t epochs) {
    const auto start = clock_type::now();
    std::size_t n = 0;
    for (std::uint64_t e = 0; e < epochs; ++e)
        for (const Batch& batch : loader.epoch(e)) (void)batch, ++n;
    return seconds_since(start) / static_cast<double>(n);
}

/// Seconds per training step on a ready batch (the compute C).
double compute_seconds(Model& model, const Batch& batch, int steps) {
    model.step(batch);  // warm-up
    const auto start = clock_type::now();
    for (int i = 0; i < steps; ++i) model.step(batch);
    return seconds_since(start) / steps;
}

/// The measured step with @p workers: wall time per step and the loop's share of waiting.
std::pair<double, double> step_seconds(const DataLoader& loader, Model& model, std::size_t batches, std::uint64_t epoch) {
    const auto start = clock_type::now();
    const EpochRange range = loader.epoch(epoch);
    const std::size_t n = first_batches(range, batches, [&](const Batch& batch) { model.step(batch); });
    const double total = seconds_since(start);
    return {total / static_cast<double>(n), std::chrono::duration<double>(range.data_wait()).count() / total};
}

/// Restores the intra-op thread count when it goes away.
struct ThreadCountScope {
    int saved = get_num_threads();
    explicit ThreadCountScope(int n) { set_num_threads(n); }
    ~ThreadCountScope() { set_num_threads(saved); }
};

/// The step with @p workers, measured in each of @p rounds rounds: the median step and the
/// median share of waiting.
struct StepMedians {
    std::vector<double> step, wait;
    void add(std::pair<double, double> reading) { step.push_back(reading.first), wait.push_back(reading.second); }
};

Result data1(const Context& ctx) {
    Result r;
    const ThreadCountScope one_thread(1);  // training on one thread: the "accelerator"
    const JpegFolder folder(ctx, ctx.quick ? 4096 : 12800);
    const std::size_t batches = ctx.quick ? 60 : 190;  // within one epoch (64 or 200 batches)
    const int rounds = 3;
    const DataLoader serial(folder.data, {.batch_size = kBatch, .shuffle = true, .seed = ctx.seed});
    std::vector<double> loads;
    for (int round = 0; round < rounds; ++round) loads.push_back(load_seconds(serial, batches));
    const double load = median(loads);
    // The model: the narrowest MLP whose step costs at least the load (the acceptance
    // case: load <= compute, so 2 workers on 2 cores can hide it).
    const Batch sample = folder.data->get_batch(serial.batch_indices(0).front());
    std::int64_t width = 64;
    double compute = 0;
    for (; width <= 8192; width *= 2) {
        Model probe(width, ctx.seed);
        compute = compute_seconds(probe, sample, 5);
        if (compute >= load) break;
    }
    width = std::min<std::int64_t>(width, 8192);
    {
        Model model(width, ctx.seed);
        std::vector<double> computes;
        for (int round = 0; round < rounds; ++round) computes.push_back(compute_seconds(model, sample, 5));
        compute = median(computes);
    }
    const int cores = machine_cores();
    const std::vector<int> counts{0, 1, 2, 3, 4};
    // Alternating rounds (0, 1, 2, 3, 4 workers, then again): a burst of load from the
    // rest of the machine lands on every count, and the medians leave it out.
    std::vector<StepMedians> measured(counts.size());
    for (int round = 0; round < rounds; ++round)
        for (std::size_t i = 0; i < counts.size(); ++i) {
            const DataLoader loader = serial.with_workers(static_cast<std::size_t>(counts[i]));
            Model model(width, ctx.seed);
            measured[i].add(step_seconds(loader, model, batches, 1 + static_cast<std::uint64_t>(round)));
        }
    std::vector<StepReading> readings;
    std::ostringstream m;
    m << "JPEG pipeline (RandomResizedCrop, flip, ColorJitter, Normalize), batch " << kBatch << ": load L = "
      << fixed(load * 1e3, 2) << " ms/batch on one thread; model MLP 784-" << width << "-" << width
      << "-10 on one thread: compute C = " << fixed(compute * 1e3, 2) << " ms/step; " << cores << " cores; medians of "
      << rounds << " alternating rounds of " << batches << " steps. ";
    for (std::size_t i = 0; i < counts.size(); ++i) {
        const int w = counts[i];
        const double step = median(measured[i].step), wait = median(measured[i].wait);
        const double ideal = w == 0 ? load + compute : std::max(load / w, compute);
        const double predicted = w == 0 ? ideal : std::max(ideal, (load + compute) / cores);
        const double predicted_wait = predicted_wait_fraction(w, load, compute);
        readings.push_back({w, step, predicted, wait});
        m << workers_text(w) << ": " << fixed(step * 1e3, 2) << " ms/step (model: "
          << (w == 0 ? "L + C = " : "max(L/" + std::to_string(w) + ", C) = ") << fixed(ideal * 1e3, 2);
        if (predicted > ideal) m << ", bounded by (L + C) / cores = " << fixed(predicted * 1e3, 2);
        m << "; waiting for data " << fixed(100 * wait, 1) << "% of the step, model " << fixed(100 * predicted_wait, 0)
          << "%); ";
        r.data["steps"].push_back({{"workers", w},
                                   {"step_seconds", step},
                                   {"ideal_seconds", ideal},
                                   {"predicted_seconds", predicted},
                                   {"wait_fraction", wait},
                                   {"predicted_wait_fraction", predicted_wait},
                                   {"rounds_step_seconds", measured[i].step},
                                   {"rounds_wait_fraction", measured[i].wait}});
    }
    r.data["load_seconds"] = load;
    r.data["compute_seconds"] = compute;
    r.data["mlp_width"] = width;
    r.data["cores"] = cores;
    r.data["batches"] = batches;
    r.data["rounds"] = rounds;
    r.measured = m.str();
    const Judgement j = judge_data1(readings, load, compute);
    r.verdict = j.verdict;
    r.why = j.why;
    return r;
}

Result data2(const Context& ctx) {
    Result r;
    const JpegFolder folder(ctx, ctx.quick ? 4096 : 12800);
    const int cores = machine_cores();
    const std::size_t batches = ctx.quick ? 60 : 190;  // for the autotuner: within one epoch (64 or 200 batches)
    const std::uint64_t epochs = ctx.quick ? 4 : 8;
    const int rounds = 3;
    const DataLoader base(folder.data, {.batch_size = kBatch, .shuffle = true, .seed = ctx.seed});
    // Alternating rounds over the counts, the median of each (see data1).
    std::vector<std::vector<double>> rates(static_cast<std::size_t>(2 * cores + 1));
    for (int round = 0; round < rounds; ++round)
        for (int w = 0; w <= 2 * cores; ++w)
            rates[static_cast<std::size_t>(w)].push_back(
                1.0 / seconds_per_batch_over_epochs(base.with_workers(static_cast<std::size_t>(w)), epochs));
    std::vector<double> rate;
    std::ostringstream m;
    m << "JPEG pipeline, batch " << kBatch << ", no training, medians of " << rounds << " alternating rounds of "
      << epochs << " epochs of " << base.num_batches() << " batches: batches/s with ";
    for (int w = 0; w <= 2 * cores; ++w) {
        rate.push_back(median(rates[static_cast<std::size_t>(w)]));
        m << workers_text(w) << " " << fixed(rate.back(), 1) << (w < 2 * cores ? ", " : "");
        r.data["throughput"].push_back({{"workers", w},
                                        {"batches_per_second", rate.back()},
                                        {"rounds_batches_per_second", rates[static_cast<std::size_t>(w)]}});
    }
    if (rate.size() > 2) m << " (2 workers / 1 worker: " << fixed(rate[2] / rate[1], 2) << "x)";
    const WorkerTuning tuned = autotune_workers(base, static_cast<std::size_t>(2 * cores), batches);
    m << "; num_workers = auto chose " << tuned.best << ".";
    r.data["autotune_best"] = tuned.best;
    r.data["cores"] = cores;
    r.data["epochs"] = epochs;
    r.data["batches_per_epoch"] = base.num_batches();
    r.data["rounds"] = rounds;
    r.measured = m.str();
    const Judgement j = judge_data2(rate, cores);
    r.verdict = j.verdict;
    r.why = j.why;
    return r;
}

Result data4(const Context& ctx) {
    Result r;
    const JpegFolder folder(ctx, 256);
    Data4Measured m;
    const DataLoader zero(folder.data, {.batch_size = 32, .shuffle = true, .seed = ctx.seed});
    const DataLoader two = zero.with_workers(2);
    std::vector<std::vector<float>> a, b;
    for (const Batch& batch : zero.epoch(3)) a.push_back(batch.inputs.to_vector<float>());
    for (const Batch& batch : two.epoch(3)) b.push_back(batch.inputs.to_vector<float>());
    m.same_batches_any_workers = a == b;
    const testkit::TransformPeerReport peer = testkit::compare_transforms_with_torchvision(ctx.seed + 5);
    m.torchvision_available = peer.available;
    for (const auto& row : peer.rows) {
        if (row.should_match) m.worst_matching_difference = std::max(m.worst_matching_difference, row.max_difference);
        else m.antialias_difference = std::max(m.antialias_difference, row.max_difference);
        r.data["comparisons"].push_back({{"what", row.what}, {"max_difference", row.max_difference},
                                         {"should_match", row.should_match}});
    }
    r.measured = "RandomResizedCrop, RandomHorizontalFlip, ColorJitter and Normalize composed on 256 JPEG images; " +
                 std::to_string(a.size()) + " batches equal with 0 and 2 workers: " +
                 (m.same_batches_any_workers ? "yes" : "no") + ". " +
                 (peer.available ? std::to_string(peer.rows.size()) + " comparisons with torchvision " + peer.version +
                                       ": worst " + fixed(m.worst_matching_difference * 255.0, 4) + "/255 where they should "
                                       "match; antialias=True when shrinking 4x differs by " + fixed(m.antialias_difference, 3) + "."
                                 : "torchvision: " + peer.why_not);
    const Judgement j = judge_data4(m);
    r.verdict = j.verdict;
    r.why = j.why;
    return r;
}

}  // namespace

std::vector<Claim> lab06_claims() {
    return {
        {"DATA-1", "06",
         "without prefetching the accelerator waits for data; worker threads with a prefetch queue make a step cost about "
         "max(load / workers, compute)",
         data1, true},
        {"DATA-2", "06", "num_workers about the cores per device; more than the cores hurts", data2, true},
        {"DATA-4", "06",
         "the augmentation pipeline (random resized crop, flip, colour jitter, normalize; resize + center crop for "
         "validation) as composable transforms",
         data4},
    };
}

}  // namespace gl::claims
