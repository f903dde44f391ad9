// Checks of tensor, pipeline and hybrid parallelism that run on one rank of any backend:
// the thread tests call them inside run_threads, the MPI tests once per process under
// mpirun. Every rank also builds the unsplit model from the same seed and compares its
// own part of the results with the unsplit model's (float tolerance: the split sums in
// another order).
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "dist/collectives.hpp"
#include "dist/parallel_training.hpp"
#include "dist/pipeline.hpp"
#include "dist/process_group.hpp"
#include "dist/tensor_parallel.hpp"
#include "dist_checks.hpp"
#include "nn/deep_mlp.hpp"

namespace gl::dist::testing {

constexpr double kSplitTolerance = 2e-5;

inline double max_diff(const Tensor& a, const Tensor& b) {
    if (a.shape() != b.shape()) return INFINITY;
    const auto x = a.contiguous().to_vector<float>(), y = b.contiguous().to_vector<float>();
    double d = 0;
    for (std::size_t i = 0; i < x.size(); ++i) d = std::max(d, std::fabs(static_cast<double>(x[i]) - y[i]));
    return d;
}

inline std::int64_t i64(std::size_t v) { return static_cast<std::int64_t>(v); }

// This rank's features of n (the split tensor parallelism uses).
inline Chunk features(std::int64_t n, const Communicator& c) { return ring_chunk(static_cast<std::size_t>(n), c.size(), c.rank()); }

// A deep MLP 8 -> 12 -> 12 -> 12 -> 3 (four Linears: two tensor-parallel blocks, four stages).
inline std::shared_ptr<nn::Sequential> deep_net(std::uint64_t seed, std::int64_t width = 12) {
    Rng rng(seed);
    return nn::make_deep_mlp(rng, 3, width, 8, 3);
}

// Column- and row-parallel Linear alone (odd sizes, so the split is uneven), then the MLP
// block: outputs, parameter gradients and input gradients equal the unsplit layers'; the
// block sends exactly one ring all-reduce of [B, out] forward and one of [B, in] back.
inline void check_tensor_parallel_layers(Communicator& comm) {
    const std::int64_t batch = 5, in = 13, hidden = 7, out = 6;
    Rng rng(3);
    nn::Linear full1(in, hidden, rng), full2(hidden, out, rng);
    const Tensor x = rand_uniform({batch, in}, -1, 1, rng);
    const Tensor r1 = rand_uniform({batch, hidden}, -1, 1, rng), r2 = rand_uniform({batch, out}, -1, 1, rng);
    const Chunk h = features(hidden, comm), c_in = features(in, comm);

    // Column-parallel: this rank's output columns, and the whole input gradient.
    Tensor x_ref = x.clone().set_requires_grad(true);
    const Tensor y_ref = full1.forward(x_ref);
    sum(y_ref * r1).backward();
    ColumnParallelLinear col(full1, comm);
    Tensor x_col = x.clone().set_requires_grad(true);
    const Tensor y_col = col.forward(x_col);
    sum(y_col * copy_columns(r1, i64(h.begin), i64(h.count))).backward();
    EXPECT_LT(max_diff(y_col, copy_columns(y_ref, i64(h.begin), i64(h.count))), kSplitTolerance) << "column forward";
    EXPECT_LT(max_diff(col.weight.grad(), copy_rows(full1.weight.grad(), i64(h.begin), i64(h.count))),
              kSplitTolerance) << "column weight gradient";
    EXPECT_LT(max_diff(x_col.grad(), x_ref.grad()), kSplitTolerance) << "column: the input gradient is summed";

    // Row-parallel: this rank's input columns give the whole output.
    Tensor x2_ref = x.clone().set_requires_grad(true);
    nn::Linear full_row(in, out, rng);
    sum(full_row.forward(x2_ref) * r2).backward();
    RowParallelLinear row(full_row, comm);
    Tensor x_row = copy_columns(x, i64(c_in.begin), i64(c_in.count)).set_requires_grad(true);
    const Tensor y_row = row.forward(x_row);
    sum(y_row * r2).backward();
    EXPECT_LT(max_diff(y_row, full_row.forward(x.clone()).detach()), kSplitTolerance) << "row forward";
    EXPECT_LT(max_diff(row.weight.grad(), copy_columns(full_row.weight.grad(), i64(c_in.begin), i64(c_in.count))),
              kSplitTolerance) << "row weight gradient";
    EXPECT_LT(max_diff(row.bias.grad(), full_row.bias.grad()), kSplitTolerance) << "row bias gradient";
    EXPECT_LT(max_diff(x_row.grad(), copy_columns(x2_ref.grad(), i64(c_in.begin), i64(c_in.count))), kSplitTolerance)
        << "row input gradient";

    // The MLP block, and its bytes.
    for (auto* l : {&full1, &full2}) {
        l->weight.set_grad(Tensor());
        l->bias.set_grad(Tensor());
    }
    Tensor x3_ref = x.clone().set_requires_grad(true);
    const Tensor z_ref = full2.forward(relu(full1.forward(x3_ref)));
    sum(z_ref * r2).backward();
    TensorParallelMlp mlp(full1, full2, comm);
    Tensor x_mlp = x.clone().set_requires_grad(true);
    comm.reset_stats();
    const Tensor z = mlp.forward(x_mlp);
    const std::uint64_t forward_bytes = comm.stats().bytes_sent;
    sum(z * r2).backward();
    EXPECT_LT(max_diff(z, z_ref), kSplitTolerance) << "MLP forward";
    EXPECT_LT(max_diff(x_mlp.grad(), x3_ref.grad()), kSplitTolerance) << "MLP input gradient";
    EXPECT_LT(max_diff(mlp.column().weight.grad(), copy_rows(full1.weight.grad(), i64(h.begin), i64(h.count))),
              kSplitTolerance);
    EXPECT_LT(max_diff(mlp.row().weight.grad(), copy_columns(full2.weight.grad(), i64(h.begin), i64(h.count))),
              kSplitTolerance);
    EXPECT_EQ(forward_bytes, allreduce_bytes_sent(AllReduceAlgo::Ring, static_cast<std::size_t>(batch * out),
                                                  sizeof(float), comm.size(), comm.rank()))
        << "one all-reduce of [B, out] in forward";
    EXPECT_EQ(comm.stats().bytes_sent, tensor_parallel_mlp_bytes(batch, in, out, comm.size(), comm.rank(), true))
        << "and one of [B, in] in backward";
}

// A few SGD steps of the tensor-parallel deep MLP end where the unsplit model does.
inline void check_tensor_parallel_training(Communicator& comm) {
    auto full = deep_net(21), ref = deep_net(21);
    auto tp = tensor_parallel_mlp(*full, comm);
    optim::SGD opt(tp->parameters(), 0.3), opt_ref(ref->parameters(), 0.3);
    for (int s = 0; s < 3; ++s) {
        const Batch b = global_batch(10, 300 + static_cast<std::uint64_t>(s));
        opt.zero_grad();
        opt_ref.zero_grad();
        cross_entropy(tp->forward(b.inputs), b.targets).backward();
        cross_entropy(ref->forward(b.inputs), b.targets).backward();
        opt.step();
        opt_ref.step();
    }
    const auto split_ref = tensor_parallel_mlp(*ref, comm);  // the same slices of the trained reference
    EXPECT_LT(max_abs_difference(tp->parameters(), split_ref->parameters()), kSplitTolerance)
        << "tensor-parallel training on " << comm.size() << " ranks";
}

// The pipeline on comm.size() stages: gradients equal the unsplit model's on the global
// batch; bytes sent match the formula; in-flight micro-batches match the schedule's bound.
inline void check_pipeline(Communicator& comm, PipeSchedule schedule, int micro_batches) {
    const int p = comm.size(), s = comm.rank();
    const Batch b = global_batch(10, 77);
    auto model = deep_net(31), ref = deep_net(31);
    cross_entropy(ref->forward(b.inputs), b.targets).backward();
    auto stage = split_stages(*model, p, s);
    const Chunk layers = ring_chunk(model->size(), p, s);
    const std::int64_t in = s == 0 ? 8 : 12, out = s == p - 1 ? 3 : 12;
    PipelineStage pipe(stage, comm, in);
    const PipelineStats st = pipe.step(b, {.schedule = schedule, .micro_batches = micro_batches});
    std::vector<Tensor> mine, theirs;
    for (std::size_t i = layers.begin; i < layers.begin + layers.count; ++i) {
        for (const Tensor& t : model->at(i).parameters()) mine.push_back(t.grad());
        for (const Tensor& t : ref->at(i).parameters()) theirs.push_back(t.grad());
    }
    ASSERT_EQ(mine.size(), theirs.size());
    for (std::size_t k = 0; k < mine.size(); ++k)
        EXPECT_LT(max_diff(mine[k], theirs[k]), kSplitTolerance)
            << to_string(schedule) << ", " << p << " stages, m = " << micro_batches << ": stage " << s << " parameter " << k;
    EXPECT_EQ(st.bytes_sent, pipeline_bytes_sent(10, in, out, p, s)) << "stage " << s;
    const auto order = schedule_order(schedule, p, micro_batches, s);
    EXPECT_EQ(st.peak_in_flight, peak_in_flight(order));
    EXPECT_EQ(st.timeline.size(), order.size());
    for (std::size_t k = 0; k < order.size() && k < st.timeline.size(); ++k) EXPECT_EQ(st.timeline[k].step, order[k]);
    if (s == p - 1) {
        EXPECT_NEAR(st.loss, cross_entropy(ref->forward(b.inputs), b.targets).item(), 1e-5) << "the global mean loss";
    }
}

// Data x tensor parallel on a grid (tensor groups of 2): each data replica takes its half
// of the global batch; gradients averaged over the data group equal the unsplit model's.
inline void check_hybrid_data_tensor(Communicator& world) {
    ASSERT_EQ(world.size() % 2, 0) << "the grid needs an even number of ranks";
    GridGroups g = make_grid(world, 2);
    const int replicas = g.data->size();
    const std::int64_t local = 4, rows = local * replicas;
    const Batch b = global_batch(rows, 55), mine = rows_of(b, local * g.data->rank(), local);
    auto full = deep_net(41), ref = deep_net(41);
    cross_entropy(ref->forward(b.inputs), b.targets).backward();
    auto tp = tensor_parallel_mlp(*full, *g.tensor);
    cross_entropy(tp->forward(mine.inputs), mine.targets).backward();
    for (Tensor& p : tp->parameters()) {  // average over the data group
        Tensor grad = p.grad();
        all_reduce(*g.data, grad.raw_data(), static_cast<std::size_t>(grad.numel()), DType::Float32);
        p.set_grad(grad * (1.0 / replicas));
    }
    // The unsplit gradients, sliced as the tensor-parallel parameters are: a model whose
    // weights are the reference's gradients, split the same way.
    auto grads = deep_net(41);
    const auto ref_params = ref->parameters();
    auto grad_params = grads->parameters();
    for (std::size_t k = 0; k < ref_params.size(); ++k) grad_params[k].set_data(ref_params[k].grad());
    const auto want = tensor_parallel_mlp(*grads, *g.tensor)->parameters();
    const auto got = tp->parameters();
    ASSERT_EQ(got.size(), want.size());
    for (std::size_t k = 0; k < got.size(); ++k)
        EXPECT_LT(max_diff(got[k].grad(), want[k]), kSplitTolerance) << "hybrid: rank " << world.rank() << " parameter " << k;
}

// fit_parallel with tp or pp (every rank of comm) trains the same model as one process's
// fit() with the same seed and global batch: every epoch's training loss and accuracy, and
// rank 0's test loss, agree to float rounding (the sums run in another order); SimpleNet or
// a deeper MLP.
inline void check_model_parallel_fit(Communicator& comm, const std::string& mode, bool deep) {
    Rng data_rng(21);
    const std::int64_t rows = 100, features = 12;  // 100 = 3 batches of 32 and one of 4
    const auto labels = [&](std::int64_t n) {
        Tensor t = empty({n}, DType::Int32);
        for (std::int64_t i = 0; i < n; ++i) t.data<std::int32_t>()[i] = static_cast<std::int32_t>(data_rng.below(10));
        return t;
    };
    auto train = std::make_shared<TensorDataset>(rand_uniform({rows, features}, -1, 1, data_rng), labels(rows), 10);
    const TensorDataset test(rand_uniform({40, features}, -1, 1, data_rng), labels(40), 10);
    const auto make = [&]() -> std::shared_ptr<nn::Module> {
        Rng rng(5);
        if (deep) return nn::make_deep_mlp(rng, 3, 16, features);
        return nn::make_simple_net(rng, features);
    };
    training::FitOptions fit;
    fit.epochs = 2;
    fit.batch_size = 32;
    fit.lr = 0.05;
    fit.optimizer = "sgd";
    fit.seed = 8;
    auto single = make();
    const auto want = training::fit(*single, train, &test, fit);
    ParallelFitOptions o;
    o.fit = fit;
    o.parallel = mode;
    o.micro_batches = 3;  // pp: 32 rows as 11 + 11 + 10, the last batch's 4 as 2 + 1 + 1
    const auto got = fit_parallel(comm, make, train, &test, o);
    ASSERT_EQ(got.size(), want.size());
    for (std::size_t e = 0; e < want.size(); ++e) {
        EXPECT_NEAR(got[e].train_loss, want[e].train_loss, 1e-5) << mode << " epoch " << e + 1;
        EXPECT_DOUBLE_EQ(got[e].train_accuracy, want[e].train_accuracy) << mode << " epoch " << e + 1;
        if (comm.rank() != 0) continue;  // rank 0 evaluates
        EXPECT_NEAR(got[e].test.loss, want[e].test.loss, 1e-5) << mode << " epoch " << e + 1;
        EXPECT_EQ(got[e].test.examples, want[e].test.examples);
    }
    EXPECT_GT(std::fabs(want[0].train_loss - want[1].train_loss), 1e-3) << "the model must have learned something";
}

}  // namespace gl::dist::testing
