#include "dist_measure.hpp"

#include <algorithm>
#include <chrono>
#include <vector>

#include "dist/collectives.hpp"
#include "dist/ddp.hpp"
#include "dist/dp.hpp"
#include "dist/thread_comm.hpp"
#include "nn/module.hpp"
#include "ops/ops.hpp"
#include "optim/optimizer.hpp"
#include "testkit/timing.hpp"

namespace gl::bench {
namespace {

using testkit::Clock;

using testkit::median;
using testkit::seconds_since;

std::shared_ptr<nn::Sequential> mlp(std::uint64_t seed) {
    Rng rng(seed);
    return std::make_shared<nn::Sequential>(std::vector<std::shared_ptr<nn::Module>>{
        std::make_shared<nn::Linear>(784, 1024, rng), std::make_shared<nn::ReLU>(),
        std::make_shared<nn::Linear>(1024, 1024, rng), std::make_shared<nn::ReLU>(),
        std::make_shared<nn::Linear>(1024, 10, rng)});
}

Batch random_batch(std::int64_t rows, std::uint64_t seed) {
    Rng rng(seed);
    Batch b{randn({rows, 784}, rng), empty({rows}, DType::Int32)};
    for (std::int64_t i = 0; i < rows; ++i) b.targets.data<std::int32_t>()[i] = static_cast<std::int32_t>(i % 10);
    return b;
}

}  // namespace

double allreduce_seconds(dist::Communicator& comm, dist::AllReduceAlgo algo, std::size_t bytes, int reps) {
    std::vector<float> data(bytes / sizeof(float), 1.0f);
    std::vector<double> times;
    for (int i = 0; i <= reps; ++i) {
        dist::barrier(comm);
        const auto start = Clock::now();
        dist::all_reduce(comm, data.data(), data.size(), DType::Float32, algo);
        if (i > 0) times.push_back(seconds_since(start));  // 0: warm-up
    }
    double t = median(times);
    dist::broadcast(comm, &t, sizeof t, 0);
    return t;
}

double thread_allreduce_seconds(dist::AllReduceAlgo algo, int workers, std::size_t bytes, int reps) {
    double result = 0.0;
    dist::run_threads(workers, [&](dist::Communicator& c) {
        const double t = allreduce_seconds(c, algo, bytes, reps);
        if (c.rank() == 0) result = t;
    }, 120.0);
    return result;
}

StepMeasurement thread_train_step(const std::string& mode, int workers, std::int64_t batch, int steps,
                                  const dist::DdpOptions& ddp_options) {
    StepMeasurement m;
    const Batch global = random_batch(batch, 1);
    dist::run_threads(workers, [&](dist::Communicator& c) {
        auto net = mlp(7);
        optim::SGD opt(net->parameters(), 0.01);
        std::function<void()> step;
        std::unique_ptr<dist::DistributedDataParallel> ddp;
        std::unique_ptr<dist::DataParallel> dp;
        Batch local;
        if (mode == "ddp") {
            ddp = std::make_unique<dist::DistributedDataParallel>(net, c, ddp_options);
            const dist::Chunk rows = dist::ring_chunk(static_cast<std::size_t>(batch), c.size(), c.rank());
            TensorDataset d(global.inputs, global.targets, 10);
            std::vector<std::size_t> idx;
            for (std::size_t i = rows.begin; i < rows.begin + rows.count; ++i) idx.push_back(i);
            local = d.get_batch(idx);
            step = [&] {
                opt.zero_grad();
                cross_entropy(ddp->forward(local.inputs), local.targets).backward();
                opt.step();
            };
        } else {
            dp = std::make_unique<dist::DataParallel>(net, c);
            step = [&] {
                if (c.rank() == 0) dp->step(global, &opt);
                else dp->step({}, nullptr);
            };
        }
        step();  // warm-up: allocations, first touch
        std::vector<double> times;
        std::uint64_t moved = 0;  // by the steps only, not the barriers
        for (int s = 0; s < steps; ++s) {
            dist::barrier(c);
            const std::uint64_t before = c.stats().bytes_sent + c.stats().bytes_received;
            const auto start = Clock::now();
            step();
            times.push_back(seconds_since(start));
            moved += c.stats().bytes_sent + c.stats().bytes_received - before;
        }
        if (c.rank() == 0) {
            m.seconds = median(times);
            m.master_bytes = moved / static_cast<std::uint64_t>(steps);
            m.parameters = net->parameter_count();
        }
        if (c.rank() == 1) m.worker_bytes = moved / static_cast<std::uint64_t>(steps);
    }, 300.0);
    return m;
}

}  // namespace gl::bench
