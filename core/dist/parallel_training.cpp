#include "dist/parallel_training.hpp"

#include <algorithm>
#include <chrono>

#include "autograd/grad_mode.hpp"
#include "dist/collectives.hpp"
#include "dist/dp.hpp"
#include "dist/tensor_parallel.hpp"
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

// One epoch of zero_grad, @p forward, cross-entropy, backward, step on every batch.
template <class Forward>
Tally train_epoch(const Communicator& comm, const DataLoader& loader, int epoch, optim::Optimizer& optimizer,
                  Forward&& forward) {
    Tally tally;
    for (const Batch& batch : loader.epoch(static_cast<std::uint64_t>(epoch - 1))) {
        optimizer.zero_grad();
        const Tensor logits = forward(batch.inputs);
        const Tensor loss = cross_entropy(logits, batch.targets);
        loss.backward();
        optimizer.step();
        const auto rows = static_cast<double>(batch.targets.numel());
        tally.loss += loss.item() * rows;
        tally.correct += static_cast<double>(count_correct(logits, batch.targets));
        tally.examples += rows;
        prof::mark_step(comm.rank());
    }
    return tally;
}

// @p every_rank_evaluates: the model's forward is collective (tensor parallel), so every
// rank runs the evaluation; otherwise rank 0 alone does.
training::EpochReport finish_epoch(Communicator& comm, Tally tally, bool already_global, int epoch,
                                   Clock::time_point start, nn::Module& model, const Dataset* test,
                                   const training::EpochFn& on_epoch, bool every_rank_evaluates = false) {
    if (!already_global) all_reduce(comm, &tally, 3, DType::Float64);
    training::EpochReport r;
    r.epoch = epoch;
    r.seconds = std::chrono::duration<double>(Clock::now() - start).count();
    if (tally.examples > 0) {
        r.train_loss = tally.loss / tally.examples;
        r.train_accuracy = tally.correct / tally.examples;
        r.samples_per_second = tally.examples / r.seconds;
    }
    if (test && (every_rank_evaluates || comm.rank() == 0)) r.test = training::evaluate(model, *test);
    if (comm.rank() == 0 && on_epoch) on_epoch(r);
    return r;
}

// The loader of one process's fit(): every rank of tp and pp draws the same batches.
DataLoader single_process_loader(const std::shared_ptr<const Dataset>& train, const training::FitOptions& fit) {
    return DataLoader(train, {.batch_size = fit.batch_size, .shuffle = true, .seed = fit.seed});
}

std::shared_ptr<nn::Sequential> as_sequential(const std::shared_ptr<nn::Module>& model, const std::string& mode) {
    auto seq = std::dynamic_pointer_cast<nn::Sequential>(model);
    check(seq != nullptr, "--parallel " + mode + " splits a Sequential model (the MLPs); got " + model->describe() +
                              "; use --model mlp or deep-mlp, or --parallel ddp");
    return seq;
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
        // Gradients are averaged over the workers when backward returns.
        const Tally tally = train_epoch(comm, loader, e, *optimizer, [&](const Tensor& x) { return ddp.forward(x); });
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

// Tensor parallel: every rank holds its slice of each Linear-ReLU-Linear pair and runs
// the whole batch; the all-reduces inside the blocks make every rank's loss the same.
std::vector<training::EpochReport> fit_tp(Communicator& comm, const std::shared_ptr<nn::Module>& model,
                                          const std::shared_ptr<const Dataset>& train, const Dataset* test,
                                          const ParallelFitOptions& o, const training::EpochFn& on_epoch) {
    auto tp = tensor_parallel_mlp(*as_sequential(model, "tp"), comm);
    auto optimizer = training::make_optimizer(o.fit.optimizer, tp->parameters(), o.fit.lr);
    const DataLoader loader = single_process_loader(train, o.fit);
    std::vector<training::EpochReport> reports;
    for (int e = 1; e <= o.fit.epochs; ++e) {
        const auto start = Clock::now();
        // Each rank's optimizer updates its own slices.
        const Tally tally = train_epoch(comm, loader, e, *optimizer, [&](const Tensor& x) { return tp->forward(x); });
        reports.push_back(finish_epoch(comm, tally, true, e, start, *tp, test, on_epoch, true));
    }
    return reports;
}

// The width of the activations entering layer @p first of @p model, for examples of
// @p features values: one example run through the layers before it.
std::int64_t width_before(nn::Sequential& model, std::size_t first, std::int64_t features) {
    NoGradGuard no_grad;
    Tensor x = zeros({1, features});
    for (std::size_t i = 0; i < first; ++i) x = model.at(i).forward(x);
    return x.shape().back();
}

// Rank 0 receives every other stage's parameters into its replica @p model (whose own
// stage is already its layers), so it can evaluate the whole model.
void gather_stages(Communicator& comm, nn::Sequential& model) {
    for (int r = 1; r < comm.size(); ++r) {
        const Chunk layers = ring_chunk(model.size(), comm.size(), r);
        for (std::size_t i = layers.begin; i < layers.begin + layers.count; ++i)
            for (Tensor& p : model.at(i).parameters()) {
                const std::size_t bytes = static_cast<std::size_t>(p.numel()) * sizeof(float);
                if (comm.rank() == r) comm.send(p.data<float>(), bytes, 0);
                if (comm.rank() == 0) comm.recv(p.data<float>(), bytes, r);
            }
    }
}

// Pipeline parallel: rank s holds stage s's layers; each global batch runs in
// micro-batches through the schedule, then every stage steps its own optimizer.
std::vector<training::EpochReport> fit_pp(Communicator& comm, const std::shared_ptr<nn::Module>& model,
                                          const std::shared_ptr<const Dataset>& train, const Dataset* test,
                                          const ParallelFitOptions& o, const training::EpochFn& on_epoch) {
    auto full = as_sequential(model, "pp");
    check(full->size() >= static_cast<std::size_t>(comm.size()),
          "--parallel pp: the model has " + std::to_string(full->size()) + " layers, fewer than the " +
              std::to_string(comm.size()) + " stages; use fewer --workers or --model deep-mlp");
    auto layers = split_stages(*full, comm.size(), comm.rank());
    const Chunk mine = ring_chunk(full->size(), comm.size(), comm.rank());
    PipelineStage stage(layers, comm, width_before(*full, mine.begin, train->example_shape().back()));
    auto optimizer = training::make_optimizer(o.fit.optimizer, layers->parameters(), o.fit.lr);
    const DataLoader loader = single_process_loader(train, o.fit);
    const bool last = comm.rank() == comm.size() - 1;
    std::vector<training::EpochReport> reports;
    for (int e = 1; e <= o.fit.epochs; ++e) {
        const auto start = Clock::now();
        Tally tally;  // counted on the last stage; the all-reduce in finish_epoch shares it
        for (const Batch& batch : loader.epoch(static_cast<std::uint64_t>(e - 1))) {
            const std::int64_t rows = batch.targets.numel();
            optimizer->zero_grad();
            const PipelineStats st = stage.step(
                batch, {.schedule = o.schedule, .micro_batches = static_cast<int>(std::min<std::int64_t>(o.micro_batches, rows))});
            optimizer->step();
            if (!last) continue;
            tally.loss += st.loss * static_cast<double>(rows);
            tally.correct += static_cast<double>(st.correct);
            tally.examples += static_cast<double>(rows);
        }
        if (test) gather_stages(comm, *full);
        reports.push_back(finish_epoch(comm, tally, false, e, start, *full, test, on_epoch));
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
    if (options.parallel == "tp") return fit_tp(comm, model, train, test, options, on_epoch);
    if (options.parallel == "pp") return fit_pp(comm, model, train, test, options, on_epoch);
    throw Error("unknown parallel mode '" + options.parallel + "'; use dp, ddp, tp or pp");
}

}  // namespace gl::dist
