#include "training/trainer.hpp"

#include <chrono>
#include <cmath>
#include <optional>

#include "ops/autocast.hpp"
#include "amp/master_weights.hpp"
#include "autograd/grad_mode.hpp"
#include "device/batch_upload.hpp"
#include "device/device.hpp"
#include "device/device_ops.hpp"
#include "ops/ops.hpp"
#include "profiler/profiler.hpp"

namespace gl::training {
namespace {

std::int64_t count_correct(const Tensor& logits, const Tensor& targets) {
    if (device::on_device(logits)) return static_cast<std::int64_t>(device::count_equal(argmax(logits), targets).item());
    const Tensor predicted = argmax(logits);
    const std::int32_t* p = predicted.data<std::int32_t>();
    const std::int32_t* t = targets.data<std::int32_t>();
    std::int64_t correct = 0;
    for (std::int64_t i = 0; i < predicted.numel(); ++i) correct += p[i] == t[i];
    return correct;
}

}  // namespace

std::unique_ptr<optim::Optimizer> make_optimizer(const std::string& name, std::vector<Tensor> params,
                                                 double lr) {
    if (name == "adam") return std::make_unique<optim::Adam>(std::move(params), lr);
    if (name == "sgd") return std::make_unique<optim::SGD>(std::move(params), lr, 0.9);
    throw Error("unknown optimizer '" + name + "'; use sgd or adam");
}

DType parse_precision(const std::string& name) {
    if (name == "fp32") return DType::Float32;
    if (name == "fp16") return DType::Float16;
    if (name == "bf16") return DType::BFloat16;
    throw Error("unknown precision '" + name + "'; use fp32, fp16 or bf16");
}

EvalResult evaluate(nn::Module& model, const Dataset& data, std::size_t batch_size) {
    check(data.size() > 0, "evaluate: the data set is empty; an accuracy needs at least one example");
    check(batch_size > 0, "evaluate: batch_size must be at least 1");
    NoGradGuard no_grad;
    const amp::AutocastGuard autocast(amp::low_precision_dtype(model.parameters()));
    model.train(false);
    const std::vector<Tensor> params = model.parameters();
    const Device where = params.empty() ? kCpu : params.front().device();
    EvalResult r;
    double loss_sum = 0.0;
    std::int64_t correct = 0;
    std::vector<std::size_t> indices;
    for (std::size_t start = 0; start < data.size(); start += batch_size) {
        indices.clear();
        for (std::size_t i = start; i < std::min(data.size(), start + batch_size); ++i) indices.push_back(i);
        Batch batch = data.get_batch(indices);
        batch = {batch.inputs.to(where), batch.targets.to(where)};  // no copy on the CPU
        const Tensor logits = model(batch.inputs);
        loss_sum += cross_entropy(logits, batch.targets).item() * static_cast<double>(indices.size());
        correct += count_correct(logits, batch.targets);
        r.examples += static_cast<std::int64_t>(indices.size());
    }
    model.train(true);
    if (r.examples > 0) {
        r.loss = loss_sum / static_cast<double>(r.examples);
        r.accuracy = static_cast<double>(correct) / static_cast<double>(r.examples);
    }
    return r;
}

namespace {

/// What one training step hands back for the epoch's bookkeeping.
struct StepResult {
    Tensor logits;
    Tensor loss;
};

// Runs `step` on every batch of an epoch and keeps the books: time, mean loss, accuracy,
// throughput, progress. The two training loops below differ only in their step.
// Sums of the epoch kept on a device, read once at its end: reading them every step would
// make the host wait for the device every step.
struct DeviceSums {
    Tensor loss, correct;
    void add(const Tensor& loss_of_batch, const Tensor& correct_in_batch, std::int64_t n) {
        NoGradGuard no_grad;
        const Tensor weighted = mul(loss_of_batch.detach(), static_cast<double>(n));
        loss = loss.defined() ? gl::add(loss, weighted) : weighted;
        correct = correct.defined() ? gl::add(correct, correct_in_batch) : correct_in_batch;
    }
};

template <class Step>
EpochReport run_epoch(const DataLoader& loader, int epoch, const ProgressFn& progress, Step&& step,
                      const DeviceOptions& where = {}) {
    using clock = std::chrono::steady_clock;
    EpochReport report;
    report.epoch = epoch;
    const auto start = clock::now();
    const std::size_t total = loader.num_batches();
    std::size_t done = 0;
    std::int64_t seen = 0, correct = 0;
    double loss_sum = 0.0;
    const bool on_device = !where.device.is_cpu();
    DeviceSums sums;
    const device::TransferStats before = device::transfer_stats();
    const EpochRange batches = loader.epoch(static_cast<std::uint64_t>(epoch - 1));
    EpochRange::iterator next = batches.begin();
    // On a device each batch is copied there once, on a copy stream: batch i+1's copy is
    // queued before step i's kernels, so it runs while they do (device/batch_upload.hpp).
    std::optional<device::BatchUploader> uploader;
    if (on_device) uploader.emplace(where.device);
    const auto start_next_copy = [&] {
        if (next == batches.end()) return;
        uploader->start(*next);
        ++next;
    };
    if (uploader) start_next_copy();
    for (;;) {
        Batch batch;
        if (uploader) {
            if (uploader->in_flight() == 0) break;
            batch = uploader->take();  // the device waits for its copy; the host does not
            start_next_copy();
        } else {
            if (next == batches.end()) break;
            batch = *next;
            ++next;
        }
        const StepResult r = step(batch, done);
        const auto n = batch.targets.numel();
        if (on_device) {
            NoGradGuard no_grad;
            sums.add(r.loss, device::count_equal(argmax(r.logits), batch.targets), n);
            if (where.read_loss_every_step) loss_sum += r.loss.item() * static_cast<double>(n);  // a host sync
        } else {
            loss_sum += r.loss.item() * static_cast<double>(n);
            correct += count_correct(r.logits, batch.targets);
        }
        seen += n;
        ++done;
        const bool known = !on_device || where.read_loss_every_step;
        if (progress) progress(done, total, known ? loss_sum / static_cast<double>(seen) : std::nan(""));
        prof::mark_step();  // the running profiler's step boundary (a no-op without one)
    }
    const device::TransferStats after = device::transfer_stats();
    report.steps = static_cast<std::int64_t>(done);
    report.host_syncs_in_steps = after.host_syncs - before.host_syncs;
    report.host_to_device_copies = after.host_to_device - before.host_to_device;
    if (on_device && seen > 0) {  // the epoch's two numbers, read once
        loss_sum = sums.loss.item();
        correct = static_cast<std::int64_t>(sums.correct.item());
    }
    report.seconds = std::chrono::duration<double>(clock::now() - start).count();
    if (seen > 0) {
        report.train_loss = loss_sum / static_cast<double>(seen);
        report.train_accuracy = static_cast<double>(correct) / static_cast<double>(seen);
        report.samples_per_second = static_cast<double>(seen) / report.seconds;
    }
    return report;
}

// The mixed-precision version of the four steps: forward under autocast, loss in FP32,
// backward from the scaled loss, then the master-weight update (which unscales, skips on
// inf/NaN, steps the FP32 masters and refreshes the 16-bit working copies).
EpochReport train_epoch_mixed(nn::Module& model, optim::Optimizer& optimizer, amp::MasterWeights& master,
                              amp::DynamicLossScaler& scaler, const DataLoader& loader, int epoch,
                              const ProgressFn& progress, const StepFn& on_step) {
    const amp::AutocastGuard autocast(master.working_dtype());
    master.collect_stats(master.stats_wanted());
    std::int64_t skipped = 0;
    EpochReport report = run_epoch(loader, epoch, progress, [&](const Batch& batch, std::size_t index) {
        master.zero_grad();
        const Tensor logits = model(batch.inputs);                   // 1. forward, matmuls 16-bit
        const Tensor loss = cross_entropy(logits, batch.targets);    // 2. loss, FP32
        const double scale = scaler.scale_value();
        scaler.scale(loss).backward();                               // 3. backward, scaled
        const bool stepped = master.step(optimizer, scaler);         // 4. update the masters
        scaler.update(!stepped);
        skipped += !stepped;
        if (on_step) on_step({index, stepped, scale, scaler.scale_value()});
        return StepResult{logits, loss};
    });
    report.skipped_steps = skipped;
    report.loss_scale = scaler.scale_value();
    report.updates = master.stats().updated;
    report.vanished_updates = master.stats().vanished;
    return report;
}

}  // namespace

EpochReport train_epoch(nn::Module& model, optim::Optimizer& optimizer, const DataLoader& loader,
                        int epoch, const ProgressFn& progress, const DeviceOptions& where) {
    return run_epoch(loader, epoch, progress, [&](const Batch& batch, std::size_t) {
        optimizer.zero_grad();                                    // 0. clear old gradients
        const Tensor logits = model(batch.inputs);                // 1. forward
        const Tensor loss = cross_entropy(logits, batch.targets); // 2. loss
        loss.backward();                                          // 3. backward
        optimizer.step();                                         // 4. update
        return StepResult{logits, loss};
    }, where);
}

void check_fit(const Dataset* train, const Dataset* test, const FitOptions& options) {
    check(train != nullptr && train->size() > 0, "fit: the training set is empty; there is nothing to train on");
    if (test) {
        check(test->size() > 0, "fit: the test set is empty, so its accuracy would mean nothing; "
                                "give a test set with examples, or none");
        check(test->example_shape() == train->example_shape(),
              "fit: test examples have shape " + shape_str(test->example_shape()) + ", training examples " +
                  shape_str(train->example_shape()) + "; both must come from the same kind of data");
        check(test->num_classes() == train->num_classes(),
              "fit: the test set has " + std::to_string(test->num_classes()) + " classes, the training set " +
                  std::to_string(train->num_classes()));
    }
    check(options.epochs >= 1, "fit: epochs must be at least 1, got " + std::to_string(options.epochs));
    check(options.batch_size >= 1, "fit: batch_size must be at least 1");
    check(std::isfinite(options.lr) && options.lr >= 0,
          "fit: the learning rate must be a finite number >= 0, got " + std::to_string(options.lr));
    check(options.device.device.is_cpu() || options.precision.dtype == DType::Float32,
          "fit: mixed precision runs on the CPU; on device " + options.device.device.str() + " train in fp32");
    device::check_available(options.device.device);
}

std::vector<EpochReport> fit(nn::Module& model, const std::shared_ptr<const Dataset>& train,
                             const Dataset* test, const FitOptions& options, const EpochFn& on_epoch,
                             const ProgressFn& progress) {
    check_fit(train.get(), test, options);
    DataLoaderOptions lo;
    lo.batch_size = options.batch_size;
    lo.shuffle = true;
    lo.seed = options.seed;
    const DataLoader loader(train, lo);
    const PrecisionOptions& precision = options.precision;
    std::unique_ptr<amp::MasterWeights> master;
    std::unique_ptr<optim::Optimizer> optimizer;
    amp::LossScalerOptions scaler_options = precision.scaler;
    scaler_options.enabled = precision.loss_scaling;
    amp::DynamicLossScaler scaler(scaler_options);
    model.to(options.device.device);  // before the optimizer: its state is made where the parameters are
    if (precision.dtype == DType::Float32) {
        optimizer = make_optimizer(options.optimizer, model.parameters(), options.lr);
    } else {
        master = std::make_unique<amp::MasterWeights>(model.parameters(), precision.dtype, precision.master_weights);
        master->collect_stats(precision.count_vanished_updates);
        optimizer = make_optimizer(options.optimizer, master->masters(), options.lr);
    }
    std::vector<EpochReport> reports;
    for (int e = 1; e <= options.epochs; ++e) {
        EpochReport r = master ? train_epoch_mixed(model, *optimizer, *master, scaler, loader, e, progress, options.on_step)
                               : train_epoch(model, *optimizer, loader, e, progress, options.device);
        if (test) r.test = evaluate(model, *test);
        if (on_epoch) on_epoch(r);
        reports.push_back(r);
    }
    return reports;
}

}  // namespace gl::training
