#include "dist/parallel_training.hpp"

#include <chrono>

#include "dist/collectives.hpp"
#include "dist/dp.hpp"
#include "ops/ops.hpp"
#include "profiler/profiler.hpp"

namespace gl::dist {
namespace {

using Clock = std::chrono::steady_clock;

std::int64_t count_correct(const Tensor& logits, const Tensor& targets) {
    const auto p = argmax(logits).to_vector<std::int32_t>();
    const auto t = targets.to_vector<std::int32_t>();
    std::int64_t correct = 0;
    for (std::size_t i = 0; i < p.size(); ++i) correct += p[i] == t[i];
    return correct;
}

// Sums of loss * examples, correct and examples over the epoch.
struct Tally {
    double loss = 0, correct = 0, examples = 0;
};

training::EpochReport finish_epoch(Communicator& comm, Tally tally, bool already_global, int epoch,
                                   Clock::time_point start, nn::Module& model, const Dataset* test,
                                   const training::EpochFn& on_epoch) {
    if (!already_global) all_reduce(comm, &tally, 3, DType::Float64);
    training::EpochReport r;
    r.epoch = epoch;
    r.seconds = std::chrono::duration<double>(Clock::now() - start).count();
    if (tally.examples > 0) {
        r.train_loss = tally.loss / tally.examples;
        r.train_accuracy = tally.correct / tally.examples;
        r.samples_per_second = tally.examples / r.seconds;
    }
    if (comm.rank() == 0) {
        if (test) r.test = training::evaluate(model, *test);
        if (on_epoch) on_epoch(r);
    }
    return r;
}

std::vector<training::EpochReport> fit_ddp(Communicator& comm, std::shared_ptr<nn::Module> model,
                                           const std::shared_ptr<const Dataset>& train, const Dataset* test,
                                           const ParallelFitOptions& o, const training::EpochFn& on_epoch) {
    const auto n = static_cast<std::size_t>(comm.size());
    check(o.fit.batch_size % n == 0, "ddp: the global batch size " + std::to_string(o.fit.batch_size) +
                                         " must be a multiple of the number of workers (" + std::to_string(n) + ")");
    DistributedDataParallel ddp(model, comm, o.ddp);
    auto optimizer = training::make_optimizer(o.fit.optimizer, model->parameters(), o.fit.lr);
    auto sampler = std::make_shared<DistributedSampler>(n, static_cast<std::size_t>(comm.rank()), true, o.fit.seed);
    DataLoader loader(train, {.batch_size = o.fit.batch_size / n}, sampler);
    std::vector<training::EpochReport> reports;
    for (int e = 1; e <= o.fit.epochs; ++e) {
        const auto start = Clock::now();
        Tally tally;
        for (const Batch& batch : loader.epoch(static_cast<std::uint64_t>(e - 1))) {
            optimizer->zero_grad();
            const Tensor logits = ddp.forward(batch.inputs);
            const Tensor loss = cross_entropy(logits, batch.targets);
            loss.backward();  // gradients averaged over the workers when it returns
            optimizer->step();
            const auto rows = static_cast<double>(batch.targets.numel());
            tally.loss += loss.item() * rows;
            tally.correct += static_cast<double>(count_correct(logits, batch.targets));
            tally.examples += rows;
            prof::mark_step(comm.rank());
        }
        reports.push_back(finish_epoch(comm, tally, false, e, start, *model, test, on_epoch));
    }
    return reports;
}

std::vector<training::EpochReport> fit_dp(Communicator& comm, std::shared_ptr<nn::Module> model,
                                          const std::shared_ptr<const Dataset>& train, const Dataset* test,
                                          const ParallelFitOptions& o, const training::EpochFn& on_epoch) {
    const std::size_t n = static_cast<std::size_t>(comm.size());
    // A last batch with fewer rows than workers cannot be split: drop it.
    const std::size_t tail = train->size() % o.fit.batch_size;
    DataLoader loader(train, {.batch_size = o.fit.batch_size, .shuffle = true, .seed = o.fit.seed,
                              .drop_last = tail > 0 && tail < n});
    DataParallel dp(model, comm);
    std::unique_ptr<optim::Optimizer> optimizer;
    if (comm.rank() == 0) optimizer = training::make_optimizer(o.fit.optimizer, model->parameters(), o.fit.lr);
    std::vector<training::EpochReport> reports;
    for (int e = 1; e <= o.fit.epochs; ++e) {
        const auto start = Clock::now();
        Tally tally;
        if (comm.rank() == 0) {
            for (const Batch& batch : loader.epoch(static_cast<std::uint64_t>(e - 1))) {
                const DpStepResult s = dp.step(batch, optimizer.get());
                tally.loss += s.loss * static_cast<double>(s.examples);
                tally.correct += static_cast<double>(s.correct);
                tally.examples += static_cast<double>(s.examples);
                prof::mark_step(comm.rank());
            }
        } else {
            for (std::size_t b = 0; b < loader.num_batches(); ++b) {
                dp.step({}, nullptr);
                prof::mark_step(comm.rank());
            }
        }
        reports.push_back(finish_epoch(comm, tally, true, e, start, *model, test, on_epoch));
    }
    return reports;
}

}  // namespace

std::vector<training::EpochReport> fit_parallel(Communicator& comm, const ModelFactory& make_model,
                                                const std::shared_ptr<const Dataset>& train, const Dataset* test,
                                                const ParallelFitOptions& options,
                                                const training::EpochFn& on_epoch) {
    training::check_fit(train.get(), test, options.fit);
    check(options.fit.precision.dtype == DType::Float32,
          "data-parallel training runs in float32; mixed precision (" + name_of(options.fit.precision.dtype) +
              ") is not supported with several workers yet");
    auto model = make_model();
    if (options.parallel == "ddp") return fit_ddp(comm, model, train, test, options, on_epoch);
    if (options.parallel == "dp") return fit_dp(comm, model, train, test, options, on_epoch);
    throw Error("unknown parallel mode '" + options.parallel + "'; use dp or ddp");
}

}  // namespace gl::dist
