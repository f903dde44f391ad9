// Lab 09's fixtures and oracles: the unsplit layers and model the graded tests compare
// with, the slices of them each rank should hold, the 1F1B order written from its rule,
// and the mpirun runner. Nothing here calls the student's code except mpi_rank_results,
// which runs only inside the mpirun workers (whose results the test records).
#pragma once

#include <cmath>
#include <memory>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "../dist/dist_checks.hpp"
#include "dist/collectives.hpp"
#include "dist/pipeline.hpp"
#include "dist/tensor_parallel.hpp"
#include "graded.hpp"
#include "nn/deep_mlp.hpp"
#include "ops/ops.hpp"
#include "optim/optimizer.hpp"

namespace gl::dist {

/// How GoogleTest prints a step in a failed comparison: "F0", "B2" (without it, the
/// struct's bytes, padding included).
inline void PrintTo(const PipeStep& step, std::ostream* os) { *os << step.op << step.micro_batch; }

}  // namespace gl::dist

namespace gl::dist::lab09 {

constexpr double kTol = 2e-5;  // float32 summed in another order

inline double max_diff(const Tensor& a, const Tensor& b) {
    if (!a.defined() || !b.defined() || a.shape() != b.shape()) return INFINITY;
    const auto x = a.contiguous().to_vector<float>(), y = b.contiguous().to_vector<float>();
    double d = 0;
    for (std::size_t i = 0; i < x.size(); ++i) {
        const double e = std::fabs(static_cast<double>(x[i]) - y[i]);
        d = std::isnan(e) ? INFINITY : std::max(d, e);
    }
    return d;
}

inline Chunk part(std::int64_t count, int n, int r) { return ring_chunk(static_cast<std::size_t>(count), n, r); }
inline std::int64_t i64(std::size_t v) { return static_cast<std::int64_t>(v); }

/// Rank r's columns, rows, entries of a 2-D (1-D) tensor: ring_chunk's split.
inline Tensor my_columns(const Tensor& t, int n, int r) {
    const Chunk c = part(t.size(1), n, r);
    return copy_columns(t, i64(c.begin), i64(c.count));
}
inline Tensor my_rows(const Tensor& t, int n, int r) {
    const Chunk c = part(t.size(0), n, r);
    return copy_rows(t, i64(c.begin), i64(c.count));
}
inline Tensor my_entries(const Tensor& t, int n, int r) {
    return reshape(my_columns(reshape(t, {1, t.numel()}), n, r), {i64(part(t.numel(), n, r).count)});
}

/// A layer, an input and the weights of the loss sum(y * r).
struct Case {
    std::shared_ptr<nn::Linear> full;
    Tensor x, r;
};
inline Case make_case(std::int64_t in, std::int64_t out, std::int64_t batch, std::uint64_t seed) {
    Rng rng(seed);
    Case k;
    k.full = std::make_shared<nn::Linear>(in, out, rng);
    k.full->bias.set_data(rand_uniform({out}, -1, 1, rng));  // a zero bias would hide a bias added N times
    k.x = rand_uniform({batch, in}, -1, 1, rng);
    k.r = rand_uniform({batch, out}, -1, 1, rng);
    return k;
}

/// The unsplit layer's output and gradients for a Case.
struct Layers {
    Tensor y, weight_grad, bias_grad, x_grad;
};
inline Layers unsplit(const Case& k) {
    Rng rng(0);
    nn::Linear layer(k.full->weight.size(1), k.full->weight.size(0), rng);
    layer.weight.set_data(k.full->weight.detach().clone());
    layer.bias.set_data(k.full->bias.detach().clone());
    Tensor x = k.x.clone().set_requires_grad(true);
    const Tensor y = layer.forward(x);
    sum(y * k.r).backward();
    return {y.detach(), layer.weight.grad(), layer.bias.grad(), x.grad()};
}

/// The deep MLP 8 -> 12 -> 12 -> 12 -> 3 (two tensor-parallel blocks, or four stages).
inline std::shared_ptr<nn::Sequential> deep_net() {
    Rng rng(91);
    return nn::make_deep_mlp(rng, 3, 12, 8, 3);
}
inline Batch batch() { return testing::global_batch(12, 92); }
inline std::int64_t stage_input(int p, int s) {
    return ring_chunk(4, p, s).begin == 0 ? 8 : 12;
}
/// Bytes stage s of p sends in one step of batch() through deep_net().
inline std::uint64_t pipeline_bytes(int p, int s) {
    const Chunk mine = ring_chunk(4, p, s);
    const std::int64_t out = mine.begin + mine.count == 4 ? 3 : 12;
    return pipeline_bytes_sent(12, stage_input(p, s), out, p, s);
}

/// Three SGD steps on fixed batches.
inline void train(nn::Module& model) {
    optim::SGD opt(model.parameters(), 0.3);
    for (std::uint64_t s = 0; s < 3; ++s) {
        const Batch b = testing::global_batch(10, 500 + s);
        opt.zero_grad();
        cross_entropy(model.forward(b.inputs), b.targets).backward();
        opt.step();
    }
}

/// The parameters rank r of n holds in tensor_parallel_mlp(model): per pair of Linears,
/// the first's rows and bias entries, the second's columns and whole bias.
inline std::vector<Tensor> tensor_parallel_slices(const nn::Sequential& model, int n, int r) {
    const auto params = model.parameters();  // weight, bias per Linear, in order
    std::vector<Tensor> out;
    for (std::size_t i = 0; i + 3 < params.size(); i += 4) {
        out.push_back(my_rows(params[i], n, r));
        out.push_back(my_entries(params[i + 1], n, r));
        out.push_back(my_columns(params[i + 2], n, r));
        out.push_back(params[i + 3].detach().clone());
    }
    return out;
}

/// The gradients of the parameters of the layers stage s of p holds.
inline std::vector<Tensor> stage_grads(const nn::Sequential& model, int p, int s) {
    const Chunk mine = ring_chunk(model.size(), p, s);
    std::vector<Tensor> out;
    for (std::size_t i = mine.begin; i < mine.begin + mine.count; ++i)
        for (const Tensor& t : model.at(i).parameters()) out.push_back(t.grad());
    return out;
}

/// Orders as pairs (op, micro-batch) for the records.
inline std::vector<std::pair<std::int32_t, std::int32_t>> encode(const std::vector<PipeStep>& order) {
    std::vector<std::pair<std::int32_t, std::int32_t>> out;
    for (const PipeStep& s : order) out.emplace_back(s.op, s.micro_batch);
    return out;
}
inline std::vector<PipeStep> decode(const std::vector<std::pair<std::int32_t, std::int32_t>>& v) {
    std::vector<PipeStep> out;
    for (const auto& [op, mb] : v) out.push_back({static_cast<char>(op), mb});
    return out;
}

/// 1F1B written from its definition: min(p-1-s, m) warm-up forwards; then, while
/// forwards remain, one forward and the oldest backward; then the remaining backwards.
inline std::vector<PipeStep> expected_1f1b(int p, int m, int s) {
    const int warmup = std::min(p - 1 - s, m);
    std::vector<PipeStep> out;
    for (int i = 0; i < warmup; ++i) out.push_back({'F', i});
    for (int k = 0; warmup + k < m; ++k) {
        out.push_back({'F', warmup + k});
        out.push_back({'B', k});
    }
    for (int i = std::max(m - warmup, 0); i < m; ++i) out.push_back({'B', i});
    return out;
}

/// Nonzero biases for the MLP block's layers: a zero bias would hide one added N times.
inline void random_biases(nn::Linear& first, nn::Linear& second, Rng& rng) {
    first.bias.set_data(rand_uniform({first.bias.shape()[0]}, -1, 1, rng));
    second.bias.set_data(rand_uniform({second.bias.shape()[0]}, -1, 1, rng));
}

/// Under mpirun, on rank c: the MLP block's output and input gradient, then its 1F1B
/// stage's gradients (m = 3).
inline std::vector<Tensor> mpi_rank_results(Communicator& c) {
    Rng rng(4);
    nn::Linear first(9, 10, rng), second(10, 5, rng);
    random_biases(first, second, rng);
    const Tensor x = rand_uniform({6, 9}, -1, 1, rng), w = rand_uniform({6, 5}, -1, 1, rng);
    TensorParallelMlp mlp(first, second, c);
    Tensor xi = x.clone().set_requires_grad(true);
    const Tensor z = mlp.forward(xi);
    sum(z * w).backward();
    std::vector<Tensor> out{z.detach(), xi.grad()};
    auto model = deep_net();
    PipelineStage stage(split_stages(*model, c.size(), c.rank()), c, stage_input(c.size(), c.rank()));
    stage.step(batch(), {.schedule = PipeSchedule::OneFOneB, .micro_batches = 3});
    for (const Tensor& g : stage_grads(*model, c.size(), c.rank())) out.push_back(g);
    return out;
}

/// What mpi_rank_results must give on rank r of np, from the unsplit layers.
inline std::vector<Tensor> mpi_expected(int np, int r) {
    Rng rng(4);
    nn::Linear first(9, 10, rng), second(10, 5, rng);
    random_biases(first, second, rng);
    const Tensor x = rand_uniform({6, 9}, -1, 1, rng), w = rand_uniform({6, 5}, -1, 1, rng);
    Tensor xr = x.clone().set_requires_grad(true);
    const Tensor z = second.forward(relu(first.forward(xr)));
    sum(z * w).backward();
    std::vector<Tensor> out{z.detach(), xr.grad()};
    auto ref = deep_net();
    const Batch b = batch();
    cross_entropy(ref->forward(b.inputs), b.targets).backward();
    for (const Tensor& g : stage_grads(*ref, np, r)) out.push_back(g);
    return out;
}

}  // namespace gl::dist::lab09
