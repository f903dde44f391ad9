// Lab 09 claims: MP-1 (model and tensor parallelism: same results, counted bytes per
// scheme, the same accuracy when training) and MP-2 (the pipeline bubble and the
// activations GPipe and 1F1B keep). Every verdict follows from numbers measured here.
#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>
#include <sstream>
#include <thread>

#include "claims.hpp"
#include "verdicts_l09.hpp"
#include "data/dataloader.hpp"
#include "data/mnist.hpp"
#include "data/mnist_files.hpp"
#include "dist/collectives.hpp"
#include "dist/ddp.hpp"
#include "dist/flat_params.hpp"
#include "dist/parallel_training.hpp"
#include "dist/pipeline.hpp"
#include "dist/tensor_parallel.hpp"
#include "dist/thread_comm.hpp"
#include "nn/deep_mlp.hpp"
#include "ops/ops.hpp"
#include "training/trainer.hpp"

namespace gl::claims {
namespace {

using dist::Communicator;
using dist::PipeSchedule;

void log(const Context& ctx, const std::string& line) {
    if (ctx.log) *ctx.log << "   " << line << "\n" << std::flush;
}

Batch random_batch(std::int64_t rows, std::int64_t features, std::int64_t classes, std::uint64_t seed) {
    Rng rng(seed);
    Batch b{rand_uniform({rows, features}, -1, 1, rng), empty({rows}, DType::Int32)};
    for (std::int64_t i = 0; i < rows; ++i) b.targets.data<std::int32_t>()[i] = static_cast<std::int32_t>(rng.below(classes));
    return b;
}

std::shared_ptr<nn::Sequential> deep_mlp(std::int64_t in, std::int64_t width, std::uint64_t seed) {
    Rng rng(seed);
    return nn::make_deep_mlp(rng, 3, width, in, 10);  // 4 Linears: 2 tensor-parallel blocks, up to 4 stages
}

/// The stage's input width: the model's input on stage 0, the hidden width after.
std::int64_t stage_input(const nn::Sequential& model, int p, int s, std::int64_t in, std::int64_t width) {
    return dist::ring_chunk(model.size(), p, s).begin == 0 ? in : width;
}
std::int64_t stage_output(const nn::Sequential& model, int p, int s, std::int64_t width) {
    const dist::Chunk c = dist::ring_chunk(model.size(), p, s);
    return c.begin + c.count == model.size() ? 10 : width;
}

double max_diff(const Tensor& a, const Tensor& b) {
    if (a.shape() != b.shape()) return INFINITY;
    return dist::max_abs_difference({a}, {b});
}

// ---- MP-1 ----------------------------------------------------------------------------------

/// Worst difference between the tensor-parallel and pipelined deep MLP and the unsplit one
/// (outputs and every gradient) on n thread workers.
double split_difference(int n) {
    const std::int64_t in = 32, width = 48;
    const Batch b = random_batch(16, in, 10, 5);
    auto ref = deep_mlp(in, width, 7);
    const Tensor logits = ref->forward(b.inputs);
    cross_entropy(logits, b.targets).backward();
    // The unsplit gradients in a model of their own, so they can be sliced like weights.
    auto grads = deep_mlp(in, width, 7);
    const auto ref_params = ref->parameters();
    auto grad_params = grads->parameters();
    for (std::size_t k = 0; k < ref_params.size(); ++k) grad_params[k].set_data(ref_params[k].grad());
    std::vector<double> worst(static_cast<std::size_t>(n), 0.0);
    dist::run_threads(n, [&](Communicator& c) {
        double& w = worst[static_cast<std::size_t>(c.rank())];
        auto tp = dist::tensor_parallel_mlp(*deep_mlp(in, width, 7), c);
        const Tensor y = tp->forward(b.inputs);
        cross_entropy(y, b.targets).backward();
        w = std::max(w, max_diff(y.detach(), logits.detach()));
        const auto want = dist::tensor_parallel_mlp(*grads, c)->parameters();
        const auto got = tp->parameters();
        for (std::size_t k = 0; k < got.size(); ++k) w = std::max(w, max_diff(got[k].grad(), want[k]));
        auto model = deep_mlp(in, width, 7);
        dist::PipelineStage stage(dist::split_stages(*model, n, c.rank()), c, stage_input(*model, n, c.rank(), in, width));
        stage.step(b, {.schedule = PipeSchedule::OneFOneB, .micro_batches = 4});
        const dist::Chunk mine = dist::ring_chunk(model->size(), n, c.rank());
        for (std::size_t i = mine.begin; i < mine.begin + mine.count; ++i) {
            const auto mp = model->at(i).parameters(), rp = ref->at(i).parameters();
            for (std::size_t k = 0; k < mp.size(); ++k) w = std::max(w, max_diff(mp[k].grad(), rp[k].grad()));
        }
    }, 30.0);
    return *std::max_element(worst.begin(), worst.end());
}

/// Bytes per training step of the deep MLP 784-256-256-256-10 at batch 64 under each
/// scheme on n workers, counted on every rank, with each formula.
std::vector<SchemeBytes> scheme_bytes(int n) {
    const std::int64_t in = 784, width = 256, batch = 64;
    const Batch b = random_batch(batch, in, 10, 9);
    std::vector<SchemeBytes> out(static_cast<std::size_t>(3 * n));
    dist::run_threads(n, [&](Communicator& c) {
        const int r = c.rank();
        // Data parallel (DDP, one bucket: one ring all-reduce of every gradient).
        auto replica = deep_mlp(in, width, 3);
        dist::DistributedDataParallel ddp(replica, c, {.bucket_bytes = std::size_t{1} << 30});
        const std::int64_t local = batch / c.size();
        const Tensor x = reshape(dist::copy_rows(b.inputs, local * r, local), {local, in});
        c.reset_stats();
        cross_entropy(ddp.forward(x), reshape(dist::copy_rows(reshape(b.targets, {batch, 1}), local * r, local), {local}))
            .backward();
        out[static_cast<std::size_t>(3 * r)] = {"data", c.size(), r, c.stats().bytes_sent,
                                               dist::allreduce_bytes_sent(dist::AllReduceAlgo::Ring,
                                                                          static_cast<std::size_t>(replica->parameter_count()),
                                                                          sizeof(float), c.size(), r)};
        // Tensor parallel: block 1 (784 -> 256 -> 256; its input is data, no gradient) and
        // block 2 (256 -> 256 -> 10).
        auto tp = dist::tensor_parallel_mlp(*deep_mlp(in, width, 3), c);
        c.reset_stats();
        cross_entropy(tp->forward(b.inputs), b.targets).backward();
        out[static_cast<std::size_t>(3 * r + 1)] = {
            "tensor", c.size(), r, c.stats().bytes_sent,
            dist::tensor_parallel_mlp_bytes(batch, in, width, c.size(), r, false) +
                dist::tensor_parallel_mlp_bytes(batch, width, 10, c.size(), r, true)};
        // Pipeline (model parallel in micro-batches): one stage per rank.
        auto model = deep_mlp(in, width, 3);
        dist::PipelineStage stage(dist::split_stages(*model, c.size(), r), c, stage_input(*model, c.size(), r, in, width));
        const dist::PipelineStats st = stage.step(b, {.schedule = PipeSchedule::OneFOneB, .micro_batches = 4});
        out[static_cast<std::size_t>(3 * r + 2)] = {
            "pipeline", c.size(), r, st.bytes_sent,
            dist::pipeline_bytes_sent(batch, stage_input(*model, c.size(), r, in, width),
                                      stage_output(*model, c.size(), r, width), c.size(), r)};
    }, 30.0);
    return out;
}

/// Test accuracies of one model trained one epoch three ways.
struct ThreeWays {
    double single = -1, tensor = -1, pipeline = -1;
};

/// Fashion-MNIST, Adam, batch 64, one epoch of the model @p net makes: test accuracy in
/// one process, with tensor parallelism on 2 threads, and pipelined on 2 stages with 4
/// micro-batches (1F1B), all with the same seed and global batch.
ThreeWays train_three_ways(const Context& ctx, const std::string& name,
                           const std::function<std::shared_ptr<nn::Module>()>& net) {
    const std::string dir = ctx.data_dir.empty() ? default_fashion_mnist_dir().string() : ctx.data_dir;
    auto train = std::make_shared<MnistDataset>(dir, MnistSplit::Train);
    const MnistDataset test(dir, MnistSplit::Test);
    training::FitOptions opt;
    opt.epochs = 1;
    opt.seed = ctx.seed;
    ThreeWays acc;
    acc.single = training::fit(*net(), train, &test, opt).back().test.accuracy;
    log(ctx, name + ", one process: test accuracy " + fixed(acc.single, 4));
    const auto parallel_accuracy = [&](const std::string& mode) {
        double accuracy = -1;
        dist::run_threads(2, [&](Communicator& c) {
            dist::ParallelFitOptions o;
            o.fit = opt;
            o.parallel = mode;  // pp: 1F1B with 4 micro-batches
            const auto reports = dist::fit_parallel(c, net, train, &test, o);
            if (c.rank() == 0) accuracy = reports.back().test.accuracy;
        }, 300.0);
        return accuracy;
    };
    acc.tensor = parallel_accuracy("tp");
    log(ctx, name + ", tensor parallel, 2 workers: test accuracy " + fixed(acc.tensor, 4));
    acc.pipeline = parallel_accuracy("pp");
    log(ctx, name + ", pipeline, 2 stages x 4 micro-batches: test accuracy " + fixed(acc.pipeline, 4));
    return acc;
}

/// SimpleNet trained three ways; without --quick the deep MLP 784-256-256-256-10 too.
void train_models(const Context& ctx, Mp1Measured& m, nlohmann::json& data) {
    const ThreeWays simple = train_three_ways(ctx, "SimpleNet", [&]() -> std::shared_ptr<nn::Module> {
        Rng rng(ctx.seed + 1);
        return nn::make_simple_net(rng);
    });
    m.single_accuracy = simple.single;
    m.tensor_accuracy = simple.tensor;
    m.pipeline_accuracy = simple.pipeline;
    data["training"] = {{"single", simple.single}, {"tensor_2", simple.tensor}, {"pipeline_2x4", simple.pipeline}};
    if (ctx.quick) return;
    const ThreeWays deep = train_three_ways(ctx, "deep MLP", [&]() -> std::shared_ptr<nn::Module> {
        Rng rng(ctx.seed + 1);
        return nn::make_deep_mlp(rng, 3, 256, 784);
    });
    m.deep_single_accuracy = deep.single;
    m.deep_tensor_accuracy = deep.tensor;
    m.deep_pipeline_accuracy = deep.pipeline;
    data["training_deep_mlp"] = {{"single", deep.single}, {"tensor_2", deep.tensor}, {"pipeline_2x4", deep.pipeline}};
}

Result mp1(const Context& ctx) {
    Result r;
    Mp1Measured m;
    m.tolerance = 1e-5;
    for (int n : {2, 4}) m.max_difference = std::max(m.max_difference, split_difference(n));
    std::ostringstream bytes;
    for (int n : {2, 4}) {
        for (const SchemeBytes& b : scheme_bytes(n)) {
            m.bytes.push_back(b);
            r.data["bytes"].push_back({{"scheme", b.scheme}, {"workers", b.workers}, {"rank", b.rank},
                                       {"counted", b.counted}, {"formula", b.formula}});
            if (b.rank == 0 || (b.scheme == "pipeline" && b.rank == 1))
                bytes << (bytes.tellp() > 0 ? ", " : "") << b.scheme << " x" << n << " rank " << b.rank << " "
                      << fixed(static_cast<double>(b.counted) * 1e-3, 1) << " kB";
        }
    }
    train_models(ctx, m, r.data);
    r.data["max_difference"] = m.max_difference;
    r.data["tolerance"] = m.tolerance;
    r.measured = "deep MLP split over 2 and 4 thread workers (tensor parallel, and a 1F1B pipeline of 4 micro-batches) "
                 "vs unsplit: largest difference in outputs and gradients " + testkit::scientific(m.max_difference, 1) +
                 "; bytes per step of MLP 784-256-256-256-10 at batch 64 (counted = formula on every rank): " +
                 bytes.str() + "; Fashion-MNIST SimpleNet, 1 epoch, Adam, batch 64: test accuracy " +
                 fixed(m.single_accuracy, 4) + " one process, " + fixed(m.tensor_accuracy, 4) +
                 " tensor parallel (2), " + fixed(m.pipeline_accuracy, 4) + " pipelined (2 stages x 4)" +
                 (m.deep_single_accuracy < 0 ? std::string("; the deep MLP is trained without --quick")
                                             : "; deep MLP 784-256-256-256-10: " + fixed(m.deep_single_accuracy, 4) +
                                                   " one process, " + fixed(m.deep_tensor_accuracy, 4) + " tensor parallel, " +
                                                   fixed(m.deep_pipeline_accuracy, 4) + " pipelined");
    const Judgement j = judge_mp1(m);
    r.verdict = j.verdict;
    r.why = j.why;
    return r;
}

// ---- MP-2 ----------------------------------------------------------------------------------

/// Every stage's stats of one pipelined step on p thread workers.
std::vector<dist::PipelineStats> run_pipeline(int p, int m, PipeSchedule schedule, std::int64_t width,
                                              std::int64_t rows, int layers_per_stage, double forward_wait) {
    std::vector<dist::PipelineStats> stats(static_cast<std::size_t>(p));
    const Batch b = random_batch(rows, width, 10, 13);
    dist::run_threads(p, [&](Communicator& c) {
        Rng rng(17 + static_cast<std::uint64_t>(c.rank()));
        auto stage = std::make_shared<nn::Sequential>();
        for (int l = 0; l < layers_per_stage; ++l) {
            stage->add(std::make_shared<nn::Linear>(width, width, rng));
            stage->add(std::make_shared<nn::ReLU>());
        }
        dist::PipelineStage pipe(stage, c, width);
        // Backward does two products per layer to forward's one: the wait is twice as long.
        stats[static_cast<std::size_t>(c.rank())] = pipe.step(
            b, {.schedule = schedule, .micro_batches = m, .forward_wait_s = forward_wait, .backward_wait_s = 2 * forward_wait});
    }, 60.0);
    return stats;
}

double bubble_of(const std::vector<dist::PipelineStats>& stats) {
    std::vector<std::vector<dist::PipeEvent>> t;
    for (const auto& s : stats) t.push_back(s.timeline);
    return dist::bubble_fraction(t);
}

nlohmann::json timeline_json(const std::string& title, const std::vector<dist::PipelineStats>& stats) {
    nlohmann::json stages = nlohmann::json::array();
    for (const auto& s : stats) {
        nlohmann::json events = nlohmann::json::array();
        for (const dist::PipeEvent& e : s.timeline)
            events.push_back({{"op", std::string(1, e.step.op)}, {"mb", e.step.micro_batch}, {"start", e.start_s},
                              {"end", e.end_s}});
        stages.push_back(events);
    }
    return {{"title", title}, {"stages", stages}};
}

Result mp2(const Context& ctx) {
    Result r;
    const double wait = 0.030;  // seconds per forward on the stand-in device; backward 2x
    const int rounds = ctx.quick ? 1 : 3;
    std::vector<BubbleRun> calibrated;
    std::vector<StashRun> memory;
    std::ostringstream cal, real;
    for (int p : {2, 4})
        for (int m : {1, 4, 8}) {
            StashRun stash{p, m, 0, 0};
            for (PipeSchedule schedule : {PipeSchedule::GPipe, PipeSchedule::OneFOneB}) {
                std::vector<double> bubbles;
                std::vector<dist::PipelineStats> last;
                for (int round = 0; round < rounds; ++round) {
                    last = run_pipeline(p, m, schedule, 16, 64, 1, wait);
                    bubbles.push_back(bubble_of(last));
                }
                const BubbleRun run{dist::to_string(schedule), p, m, median(bubbles), dist::ideal_bubble_fraction(p, m)};
                calibrated.push_back(run);
                (schedule == PipeSchedule::GPipe ? stash.gpipe_bytes : stash.one_f_one_b_bytes) = last[0].peak_stashed_bytes;
                r.data["calibrated"].push_back({{"schedule", run.schedule}, {"stages", p}, {"micro_batches", m},
                                                {"bubble", run.measured}, {"ideal", run.ideal},
                                                {"stage0_peak_in_flight", last[0].peak_in_flight},
                                                {"stage0_peak_stashed_bytes", last[0].peak_stashed_bytes}});
                if (p == 4 && m == 8)
                    r.data["timelines"].push_back(timeline_json(run.schedule + ", p = 4, m = 8 (calibrated waits)", last));
                cal << (cal.tellp() > 0 ? ", " : "") << run.schedule << " p" << p << " m" << m << " "
                    << fixed(run.measured, 3) << " (" << fixed(run.ideal, 3) << ")";
            }
            memory.push_back(stash);
            r.data["stash"].push_back({{"stages", p}, {"micro_batches", m}, {"gpipe_bytes", stash.gpipe_bytes},
                                       {"one_f_one_b_bytes", stash.one_f_one_b_bytes}});
            // Real compute beside it: each stage 2 x Linear(512, 512), 1F1B, no waits.
            const auto stats = run_pipeline(p, m, PipeSchedule::OneFOneB, 512, 256, 2, 0.0);
            const double bubble = bubble_of(stats);
            r.data["real_compute"].push_back({{"stages", p}, {"micro_batches", m}, {"bubble", bubble},
                                              {"ideal", dist::ideal_bubble_fraction(p, m)}});
            real << (real.tellp() > 0 ? ", " : "") << "p" << p << " m" << m << " " << fixed(bubble, 3);
            log(ctx, "p = " + std::to_string(p) + ", m = " + std::to_string(m) + " done");
        }
    std::ostringstream mem;
    for (const StashRun& s : memory)
        if (s.micro_batches > s.stages)
            mem << (mem.tellp() > 0 ? ", " : "") << "p" << s.stages << " m" << s.micro_batches << " GPipe "
                << s.gpipe_bytes << " B vs 1F1B " << s.one_f_one_b_bytes << " B";
    r.measured = "bubble fraction measured (formula) on the thread backend, each stage's compute a calibrated wait "
                 "standing in for a device (forward " + fixed(wait * 1e3, 0) + " ms, backward " +
                 fixed(2 * wait * 1e3, 0) + " ms per micro-batch) and timed on that device's clock (a step starts when "
                 "the device is free and its input, sent with its ready time, is there), so the schedule and not this "
                 "machine's " + std::to_string(std::thread::hardware_concurrency()) + " cores or load decides, median of " +
                 std::to_string(rounds) + ": " + cal.str() + "; with real compute instead, on the host's clock (2 x Linear(512) per stage, "
                 "batch 256, 1F1B, threads sharing the cores and the machine): " + real.str() +
                 "; stage 0's peak stashed activations: " + mem.str();
    const Judgement j = judge_mp2(calibrated, memory);
    r.verdict = j.verdict;
    r.why = j.why;
    return r;
}

}  // namespace

std::vector<Claim> lab09_claims() {
    return {
        {"MP-1", "09",
         "model parallelism puts layers on different devices; tensor parallelism splits one matrix multiply across "
         "devices (column/row split + all-reduce) with the same result",
         mp1},
        {"MP-2", "09", "pipeline parallelism with micro-batches: bubble fraction (p-1)/(m+p-1)", mp2, true},
    };
}

}  // namespace gl::claims
