// Tensors on a device (core/device/): every op SimpleNet training needs, forward and
// backward, on the `cuda_cpu` device (the CUDA kernels of kernels/cuda/tensor_ops.cuh on the
// CPU runtime) against the same op on the CPU, on shapes that are no multiple of a block;
// moves, factories, mixed-device errors, the optimizers, and a whole training step that
// waits for the device zero times. On a GPU the same tests run with GRADLAB_TEST_DEVICE=cuda.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "base/rng.hpp"
#include "cuda_cpu/streams.hpp"
#include "cuda_cpu/timeline.hpp"
#include "device/batch_upload.hpp"
#include "device/device.hpp"
#include "device/device_ops.hpp"
#include "device/device_pinned.hpp"
#include "data/dataset.hpp"
#include "training/trainer.hpp"
#include "nn/conv_layers.hpp"
#include "nn/module.hpp"
#include "ops/conv.hpp"
#include "ops/ops.hpp"
#include "optim/optimizer.hpp"
#include "testkit/random.hpp"

namespace gl {
namespace {

/// The device under test: cuda_cpu, or the one GRADLAB_TEST_DEVICE names (cuda on a GPU).
Device test_device() {
    const char* name = std::getenv("GRADLAB_TEST_DEVICE");
    return name ? parse_device(name) : kCudaCpu;
}

/// The suites' base: skips, with the reason, when the device under test is not there (a
/// run with GRADLAB_TEST_DEVICE=cuda on a machine without a GPU).
class OnTestDevice : public ::testing::Test {
protected:
    void SetUp() override {
        try {
            device::check_available(test_device());
        } catch (const Error& e) {
            GTEST_SKIP() << "needs a CUDA device: " << e.what();
        }
    }
};
class DeviceTensor : public OnTestDevice {};
class DeviceOps : public OnTestDevice {};
class DeviceTraining : public OnTestDevice {};

Tensor random_tensor(const Shape& shape, std::uint64_t seed) {
    return from_vector(testkit::random_floats(static_cast<std::size_t>(numel_of(shape)), seed), shape);
}

void expect_close(const Tensor& cpu, const Tensor& dev, double tol, const std::string& what) {
    ASSERT_EQ(dev.device(), test_device()) << what << ": the result left the device";
    ASSERT_EQ(cpu.shape(), dev.shape()) << what;
    const std::vector<double> a = cpu.to_vector<double>(), b = dev.to_vector<double>();
    for (std::size_t i = 0; i < a.size(); ++i)
        ASSERT_NEAR(a[i], b[i], tol * (1.0 + std::fabs(a[i]))) << what << " at element " << i;
}

/// Runs @p op on CPU leaves and on device copies of them; compares the results, then the
/// gradients of sum(result * weights) with respect to every input.
void check_op(const std::string& name, const std::vector<Tensor>& inputs,
              const std::function<Tensor(const std::vector<Tensor>&)>& op, double tol = 1e-5) {
    SCOPED_TRACE(name);
    std::vector<Tensor> cpu_in, dev_in;
    for (const Tensor& x : inputs) {
        cpu_in.push_back(x.clone().set_requires_grad(true));
        dev_in.push_back(x.to(test_device()).set_requires_grad(true));
    }
    const Tensor y_cpu = op(cpu_in), y_dev = op(dev_in);
    expect_close(y_cpu, y_dev, tol, name + " forward");
    const Tensor w = random_tensor(y_cpu.shape(), 99);  // a gradient that is not all ones
    sum(mul(y_cpu, w)).backward();
    sum(mul(y_dev, w.to(test_device()))).backward();
    for (std::size_t i = 0; i < inputs.size(); ++i) {
        ASSERT_TRUE(dev_in[i].grad().defined()) << name << ": no gradient for input " << i;
        expect_close(cpu_in[i].grad(), dev_in[i].grad(), tol, name + " backward, input " + std::to_string(i));
    }
}

TEST_F(DeviceTensor, NamesParseAndPrint) {
    EXPECT_EQ(parse_device("cuda_cpu"), kCudaCpu);
    EXPECT_EQ(parse_device("cpu"), kCpu);
    EXPECT_EQ(parse_device("cuda:1").index, 1);
    EXPECT_EQ(kCudaCpu.str(), "cuda_cpu");
    try {
        parse_device("gpu");
        FAIL() << "an unknown device was accepted";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("cuda_cpu"), std::string::npos) << e.what();
    }
}

TEST_F(DeviceTensor, CudaWithoutAGpuStopsWithTheReasonAndTheHint) {
    try {
        device::check_available({DeviceKind::CUDA, 0});
    } catch (const Error& e) {
        const std::string m = e.what();
        EXPECT_NE(m.find("not available"), std::string::npos) << m;
        EXPECT_NE(m.find("cuda_cpu"), std::string::npos) << m;
        return;
    }
    GTEST_SKIP() << "a GPU is present: cuda is available here";
}

TEST_F(DeviceTensor, MovesCountCopiesAndSyncs) {
    const Tensor x = random_tensor({3, 5}, 1);
    device::reset_transfer_stats();
    const Tensor d = x.to(test_device());
    EXPECT_EQ(d.device(), test_device());
    EXPECT_EQ(device::transfer_stats().host_to_device, 1);
    EXPECT_EQ(device::transfer_stats().host_to_device_bytes, 15 * 4);
    EXPECT_EQ(device::transfer_stats().host_syncs, 0);
    EXPECT_EQ(d.to(test_device()).impl_ptr(), d.impl_ptr()) << "a move to where it is must not copy";
    EXPECT_EQ(d.cpu().to_vector<float>(), x.to_vector<float>());
    EXPECT_EQ(device::transfer_stats().host_syncs, 1) << "a copy to the host waits for the device once";
    EXPECT_THROW(d.data<float>(), Error) << "CPU code must not read device memory";
    // A transposed view moves as a contiguous copy, and comes back equal.
    EXPECT_EQ(t(d).cpu().to_vector<float>(), t(x).to_vector<float>());
    EXPECT_DOUBLE_EQ(sum(d).item(), sum(x).item() + 0.0 * sum(d).item());
}

TEST_F(DeviceTensor, FreedDeviceMemoryIsCachedAndReused) {
    // A step's freed tensors go back to the cache, not to cudaFree (which would wait for the
    // device); the next request of the same size is a hit.
    device::device_empty_cache(test_device());
    const memory::CacheStats before = device::device_cache_stats(test_device());
    { const Tensor first = zeros({37, 11}, DType::Float32, test_device()); }
    const memory::CacheStats freed = device::device_cache_stats(test_device());
    EXPECT_EQ(freed.misses, before.misses + 1);
    EXPECT_GT(freed.bytes_cached, before.bytes_cached) << "the freed block is kept";
    const Tensor second = zeros({37, 11}, DType::Float32, test_device());
    const memory::CacheStats reused = device::device_cache_stats(test_device());
    EXPECT_EQ(reused.hits, freed.hits + 1);
    EXPECT_EQ(reused.misses, freed.misses);
    EXPECT_EQ(second.cpu().to_vector<float>(), std::vector<float>(37 * 11, 0.0f));
}

TEST_F(DeviceTensor, FactoriesOnTheDevice) {
    EXPECT_EQ(zeros({4, 3}, DType::Float32, test_device()).cpu().to_vector<float>(), std::vector<float>(12, 0.0f));
    EXPECT_EQ(full({5}, 2.5, DType::Float32, test_device()).cpu().to_vector<float>(), std::vector<float>(5, 2.5f));
    EXPECT_EQ(ones({2}, DType::Float32, test_device()).device(), test_device());
}

TEST_F(DeviceTensor, MixedDevicesStopWithWhichTensorsAndWhatToDo) {
    const Tensor a = random_tensor({2, 3}, 1).to(test_device());
    const Tensor b = random_tensor({2, 3}, 2);
    for (const auto& [name, op] : std::vector<std::pair<std::string, std::function<void()>>>{
             {"add", [&] { (void)add(a, b); }},
             {"matmul", [&] { (void)matmul(a, t(b)); }},
             {"cross_entropy", [&] { (void)cross_entropy(a, from_vector<std::int32_t>({0, 1}, {2})); }}}) {
        try {
            op();
            FAIL() << name << " accepted tensors on two devices";
        } catch (const Error& e) {
            const std::string m = e.what();
            EXPECT_NE(m.find(name), std::string::npos) << m;
            EXPECT_NE(m.find(test_device().str()), std::string::npos) << m;
            EXPECT_NE(m.find("cpu"), std::string::npos) << m;
            EXPECT_NE(m.find(".to(device)"), std::string::npos) << m;
        }
    }
}

TEST_F(DeviceOps, ElementwiseAndBroadcast) {
    check_op("add same shape", {random_tensor({5, 7}, 1), random_tensor({5, 7}, 2)},
             [](const auto& x) { return add(x[0], x[1]); });
    check_op("add bias row", {random_tensor({5, 7}, 3), random_tensor({7}, 4)},
             [](const auto& x) { return add(x[0], x[1]); });
    check_op("sub both broadcast", {random_tensor({3, 1, 5}, 5), random_tensor({4, 1}, 6)},
             [](const auto& x) { return sub(x[0], x[1]); });
    check_op("mul transposed", {random_tensor({6, 3}, 7), random_tensor({3, 6}, 8)},
             [](const auto& x) { return mul(t(x[0]), x[1]); });
    check_op("mul scalar, neg", {random_tensor({11}, 9)}, [](const auto& x) { return neg(mul(x[0], 2.5)); });
    check_op("relu", {random_tensor({9, 5}, 10)}, [](const auto& x) { return relu(x[0]); });
    // An input read by two ops gets two gradients, summed in place (add_: the axpy kernel).
    check_op("gradients summed", {random_tensor({3, 7}, 11)}, [](const auto& x) { return add(mul(x[0], x[0]), x[0]); });
}

// The gather kernel copies a strided view into a contiguous tensor for elements of 1, 2, 4
// and 8 bytes (the float32 path is also checked through autograd above): the bytes of a
// transposed view of odd shape equal the CPU's.
TEST_F(DeviceOps, GatherMakesStridedViewsContiguousForEveryElementSize) {
    for (const DType dtype : {DType::Int8, DType::Float16, DType::Int32, DType::Float64}) {
        SCOPED_TRACE(name_of(dtype));
        const Tensor x = to_dtype(mul(random_tensor({5, 7}, 25), 50.0), dtype);
        const Tensor on_device = t(x.to(test_device()));
        ASSERT_FALSE(on_device.is_contiguous());
        const Tensor want = t(x).contiguous(), got = on_device.contiguous();
        ASSERT_TRUE(got.is_contiguous());
        ASSERT_EQ(got.device(), test_device());
        const Tensor back = got.cpu();
        ASSERT_EQ(back.shape(), want.shape());
        EXPECT_EQ(0, std::memcmp(back.raw_data_ptr(), want.raw_data_ptr(), static_cast<std::size_t>(want.numel()) * size_of(dtype)));
    }
}

TEST_F(DeviceOps, CountEqualAndBadTargets) {
    const Tensor a = from_vector<std::int32_t>({1, 2, 3, 4, 5}, {5}), b = from_vector<std::int32_t>({1, 0, 3, 0, 5}, {5});
    EXPECT_EQ(device::count_equal(a.to(test_device()), b.to(test_device())).item(), 3.0);
    // A kernel cannot throw: a target outside the classes makes the loss NaN instead.
    const Tensor logits = random_tensor({2, 3}, 12).to(test_device());
    EXPECT_TRUE(std::isnan(cross_entropy(logits, from_vector<std::int32_t>({0, 3}, {2}).to(test_device())).item()));
}

TEST_F(DeviceOps, Reductions) {
    check_op("sum all", {random_tensor({7, 13}, 11)}, [](const auto& x) { return sum(x[0]); });
    check_op("sum dim 0", {random_tensor({67, 5}, 12)}, [](const auto& x) { return sum(x[0], {0}); });
    check_op("mean dims 0,2 keepdim", {random_tensor({3, 4, 5}, 13)},
             [](const auto& x) { return mean(x[0], {0, 2}, true); });
    check_op("sum of a transposed view", {random_tensor({5, 300}, 14)},
             [](const auto& x) { return sum(t(x[0]), {1}); });
    const Tensor x = random_tensor({9, 7}, 15);
    EXPECT_EQ(argmax(x.to(test_device())).cpu().to_vector<std::int32_t>(), argmax(x).to_vector<std::int32_t>());
}

TEST_F(DeviceOps, LossAndMatmul) {
    check_op("log_softmax", {random_tensor({6, 11}, 16)}, [](const auto& x) { return log_softmax(x[0]); });
    const Tensor targets = from_vector<std::int32_t>({0, 10, 3, 3, 7, 1}, {6});
    check_op("cross_entropy", {mul(random_tensor({6, 11}, 17), 8.0)}, [&](const auto& x) {
        return cross_entropy(x[0], targets.to(x[0].device()));
    });
    check_op("matmul odd shapes", {random_tensor({13, 7}, 18), random_tensor({7, 9}, 19)},
             [](const auto& x) { return matmul(x[0], x[1]); });
    check_op("matmul transposed (Linear)", {random_tensor({5, 33}, 20), random_tensor({3, 33}, 21)},
             [](const auto& x) { return matmul(x[0], t(x[1])); });
    check_op("reshape of a transposed view", {random_tensor({4, 6}, 22)},
             [](const auto& x) { return reshape(t(x[0]), {3, 8}); });
}

// The CNN's ops: conv2d by the implicit-GEMM kernel (every option: stride, padding,
// dilation, groups, bias) and max pooling, with overlapping and padded windows.
TEST_F(DeviceOps, ConvolutionAndPoolingMatchTheCpu) {
    Conv2dOptions strided;
    strided.stride = {2, 1}, strided.padding = {1, 2}, strided.dilation = {1, 2};
    check_op("conv2d strided, padded, dilated, with bias",
             {random_tensor({3, 2, 9, 7}, 40), random_tensor({5, 2, 3, 2}, 41), random_tensor({5}, 42)},
             [&](const auto& x) { return conv2d(x[0], x[1], x[2], strided); }, 1e-4);
    Conv2dOptions grouped;
    grouped.groups = 3, grouped.padding = {1, 1};
    check_op("conv2d in 3 groups, no bias", {random_tensor({2, 6, 5, 11}, 43), random_tensor({9, 2, 3, 3}, 44)},
             [&](const auto& x) { return conv2d(x[0], x[1], Tensor(), grouped); }, 1e-4);
    check_op("max_pool2d 2x2", {random_tensor({2, 3, 7, 9}, 45)}, [](const auto& x) { return max_pool2d(x[0], 2); });
    // Overlapping windows: an input that is the maximum of two windows gets both gradients.
    check_op("max_pool2d 3x3 stride 2 padding 1", {random_tensor({1, 4, 11, 6}, 46)},
             [](const auto& x) { return max_pool2d(x[0], 3, 2, 1); });
}

TEST_F(DeviceOps, ConvolutionRefusesMixedDevicesAndOpsWithoutAKernel) {
    const Tensor x = random_tensor({1, 2, 5, 5}, 47).to(test_device()), w = random_tensor({3, 2, 3, 3}, 48);
    try {
        conv2d(x, w, Tensor());
        FAIL() << "a CPU weight with a device input was accepted";
    } catch (const Error& e) {
        const std::string m = e.what();
        EXPECT_NE(m.find("conv2d"), std::string::npos) << m;
        EXPECT_NE(m.find("weight"), std::string::npos) << m;
    }
    try {
        avg_pool2d(x, 2);
        FAIL() << "avg_pool2d ran on a device it has no kernel for";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("x.cpu()"), std::string::npos) << e.what();
    }
}

TEST_F(DeviceOps, CastsTo16BitAndBackMatchTheCpu) {
    for (DType low : {DType::Float16, DType::BFloat16}) {
        check_op(std::string("cast to ") + name_of(low) + " and back", {random_tensor({5, 9}, 23)},
                 [low](const auto& x) { return cast(cast(x[0], low), DType::Float32); }, 0.0);
        const Tensor x = random_tensor({17}, 24);
        EXPECT_EQ(to_dtype(x.to(test_device()), low).cpu().to_vector<float>(), to_dtype(x, low).to_vector<float>());
    }
}

/// Parameters after @p steps updates of optimizer @p name from fixed gradients, on @p device.
std::vector<float> optimized(const std::string& name, Device device, int steps) {
    Tensor p = random_tensor({7, 3}, 30).to(device).set_requires_grad(true);
    std::unique_ptr<optim::Optimizer> opt;
    if (name == "sgd") opt = std::make_unique<optim::SGD>(std::vector<Tensor>{p}, 0.1, 0.9, 0.01);
    else opt = std::make_unique<optim::Adam>(std::vector<Tensor>{p}, 0.01, 0.9, 0.999, 1e-8, 0.01);
    for (int s = 0; s < steps; ++s) {
        p.set_grad(random_tensor({7, 3}, 31 + static_cast<std::uint64_t>(s)).to(device));
        opt->step();
    }
    return p.cpu().to_vector<float>();
}

TEST_F(DeviceOps, SgdAndAdamMatchTheCpu) {
    for (const std::string name : {"sgd", "adam"}) {
        const auto cpu = optimized(name, kCpu, 3), dev = optimized(name, test_device(), 3);
        for (std::size_t i = 0; i < cpu.size(); ++i) EXPECT_NEAR(cpu[i], dev[i], 1e-5) << name << " element " << i;
    }
}

/// Losses of @p steps SimpleNet training steps (small: 20-16-5, batch 9) on @p device,
/// with the model moved by Module::to and the optimizer built after the move.
std::vector<double> simple_net_losses(Device device, int steps, std::int64_t* syncs_in_steps = nullptr) {
    Rng rng(3);
    auto net = nn::make_simple_net(rng, 20, 16, 5);
    net->to(device);
    optim::Adam opt(net->parameters(), 0.01);
    std::vector<double> losses;
    std::vector<Tensor> kept;
    for (int s = 0; s < steps; ++s) {
        const Tensor x = random_tensor({9, 20}, 40).to(device);  // one batch: the loss must fall
        const Tensor y = from_vector<std::int32_t>({0, 1, 2, 3, 4, 4, 3, 2, 1}, {9}).to(device);
        const std::int64_t before = device::transfer_stats().host_syncs;
        opt.zero_grad();
        const Tensor loss = cross_entropy((*net)(x), y);
        loss.backward();
        opt.step();
        if (syncs_in_steps) *syncs_in_steps += device::transfer_stats().host_syncs - before;
        kept.push_back(loss);  // read after the steps: reading it is a sync
    }
    for (const Tensor& l : kept) losses.push_back(l.item());
    return losses;
}

TEST_F(DeviceTraining, SimpleNetStepsMatchTheCpuAndNeverWaitForTheDevice) {
    std::int64_t syncs = 0;
    const auto cpu = simple_net_losses(kCpu, 3), dev = simple_net_losses(test_device(), 3, &syncs);
    ASSERT_EQ(cpu.size(), dev.size());
    for (std::size_t i = 0; i < cpu.size(); ++i) EXPECT_NEAR(cpu[i], dev[i], 1e-5) << "step " << i;
    EXPECT_GT(cpu.front(), cpu.back()) << "the loss should fall";
    EXPECT_EQ(syncs, 0) << "a training step on a device must not wait for it";
}

// The CNN (conv, ReLU, pool twice, then two Linear layers) on 8x8 images: three Adam steps
// on the device give the CPU's losses, and a step never waits for the device.
TEST_F(DeviceTraining, CnnStepsMatchTheCpuAndNeverWaitForTheDevice) {
    auto losses = [](Device device, std::int64_t* syncs) {
        Rng rng(4);
        auto net = nn::make_cnn(rng, 8, 3, 4, 6, 5);
        net->to(device);
        optim::Adam opt(net->parameters(), 0.01);
        const Tensor x = random_tensor({7, 64}, 49).to(device);
        const Tensor y = from_vector<std::int32_t>({0, 1, 2, 3, 4, 0, 1}, {7}).to(device);
        std::vector<Tensor> kept;
        for (int s = 0; s < 3; ++s) {
            const std::int64_t before = device::transfer_stats().host_syncs;
            opt.zero_grad();
            const Tensor loss = cross_entropy((*net)(x), y);
            loss.backward();
            opt.step();
            *syncs += device::transfer_stats().host_syncs - before;
            kept.push_back(loss);
        }
        std::vector<double> out;
        for (const Tensor& l : kept) out.push_back(l.item());
        return out;
    };
    std::int64_t cpu_syncs = 0, device_syncs = 0;
    const auto cpu = losses(kCpu, &cpu_syncs), dev = losses(test_device(), &device_syncs);
    for (std::size_t i = 0; i < cpu.size(); ++i) EXPECT_NEAR(cpu[i], dev[i], 1e-4) << "step " << i;
    EXPECT_GT(cpu.front(), cpu.back()) << "the loss should fall";
    EXPECT_EQ(device_syncs, 0) << "a CNN step on a device must not wait for it";
}

TEST_F(DeviceTraining, ModelAndOptimizerStateMove) {
    Rng rng(3);
    auto net = nn::make_simple_net(rng, 4, 3, 2);
    optim::SGD opt(net->parameters(), 0.1, 0.9);
    const Tensor w = net->parameters()[0];
    net->to(test_device());
    opt.to(test_device());
    EXPECT_EQ(w.device(), test_device()) << "parameters keep their identity when they move";
    for (const Tensor& p : opt.params()) EXPECT_EQ(p.device(), test_device());
    const Tensor loss = cross_entropy((*net)(random_tensor({2, 4}, 5).to(test_device())),
                                      from_vector<std::int32_t>({0, 1}, {2}).to(test_device()));
    loss.backward();
    EXPECT_NO_THROW(opt.step()) << "the momentum moved with the parameters";
}

/// 40 examples of 6 features in 3 classes: 5 batches of 8.
std::shared_ptr<TensorDataset> small_data_set() {
    std::vector<std::int32_t> labels;
    for (int i = 0; i < 40; ++i) labels.push_back(i % 3);
    return std::make_shared<TensorDataset>(random_tensor({40, 6}, 8), from_vector<std::int32_t>(labels, {40}), 3);
}

/// One epoch of fit() on @p device over small_data_set(), SGD, batches of 8.
training::EpochReport fit_one_epoch(Device device, bool read_loss = false, const training::ProgressFn& progress = nullptr) {
    Rng rng(5);
    auto net = nn::make_simple_net(rng, 6, 5, 3);
    training::FitOptions o;
    o.epochs = 1;
    o.batch_size = 8;
    o.optimizer = "sgd";
    o.device = {device, read_loss};
    const auto reports = training::fit(*net, small_data_set(), nullptr, o, nullptr, progress);
    EXPECT_EQ(reports.size(), 1u);
    return reports.at(0);
}

TEST_F(DeviceTraining, FitStagesBatchesInTheRuntimesPinnedMemoryAndReportsEverySync) {
    const PinnedMemoryProvider& pinned = device::pinned_host_memory(test_device());
    for (const bool read_loss : {false, true}) {
        std::size_t most_locked = 0;  // the pinned bytes alive while a step runs
        const auto progress = [&](std::size_t, std::size_t, double) {
            most_locked = std::max(most_locked, pinned.locked_bytes());
        };
        const training::EpochReport report = fit_one_epoch(test_device(), read_loss, progress);
        EXPECT_GT(most_locked, 0u) << "the batches were not staged in the runtime's page-locked memory";
        EXPECT_EQ(report.steps, 5);
        EXPECT_EQ(report.host_to_device_copies, 2 * report.steps) << "each batch goes to the device once";
        EXPECT_EQ(report.host_syncs_in_steps, read_loss ? report.steps : 0)
            << "the only host syncs in the steps are the loss reads the loop reports";
    }
}

// fit() on the CPU runtime, read from its timeline (the order the program imposed, through
// the recorded vector clocks, not times): each batch is copied once, from one of two pinned
// staging slots, on a copy stream; batch i+1's copy is queued before step i's kernels and
// nothing orders the two, so they may run at the same time; and nothing races: each copy
// comes after the kernels two steps back (whose memory the cache may hand it) and before
// its own step's kernels. Under randomized stream schedules the loss still equals the CPU's.
TEST_F(DeviceTraining, FitCopiesBatchIPlus1OnACopyStreamWhileStepIComputes) {
    using cuda::cpu::happens_before;
    using cuda::cpu::may_overlap;
    using cuda::cpu::TimelineEntry;
    const double cpu_loss = fit_one_epoch(kCpu).train_loss;
    if (test_device() != kCudaCpu) {  // a GPU: no timeline here (Nsight Systems draws one); the results
        const training::EpochReport report = fit_one_epoch(test_device());
        EXPECT_NEAR(report.train_loss, cpu_loss, 1e-5 * (1 + std::fabs(cpu_loss)));
        EXPECT_EQ(report.host_syncs_in_steps, 0);
        EXPECT_EQ(report.host_to_device_copies, 2 * report.steps);
        return;
    }
    for (const std::uint64_t seed : {0, 1, 2}) {  // 0: in order; else randomized
        SCOPED_TRACE("stream schedule seed " + std::to_string(seed));
        std::optional<cuda::cpu::ScopedStreamSchedule> schedule;
        if (seed > 0) schedule.emplace(cuda::cpu::StreamSchedule{true, seed, 200});
        std::vector<TimelineEntry> entries;
        training::EpochReport report;
        {
            cuda::cpu::ScopedTimeline recording;
            report = fit_one_epoch(kCudaCpu);
            entries = cuda::cpu::timeline();
        }
        EXPECT_NEAR(report.train_loss, cpu_loss, 1e-5 * (1 + std::fabs(cpu_loss)));
        EXPECT_EQ(report.host_syncs_in_steps, 0);
        std::vector<TimelineEntry> copies, kernels;  // the batch copies; the default stream's kernels
        for (const TimelineEntry& e : entries) {
            if (e.kind == cuda::cpu::OpKind::copy_h2d && e.stream != 0) copies.push_back(e);
            if (e.kind == cuda::cpu::OpKind::kernel && e.stream == 0) kernels.push_back(e);
        }
        const auto steps = static_cast<std::size_t>(report.steps);
        ASSERT_EQ(steps, 5u);
        ASSERT_EQ(copies.size(), 2 * steps) << "inputs and targets, once per batch, on a stream";
        std::sort(copies.begin(), copies.end(), [](const auto& a, const auto& b) { return a.seq < b.seq; });
        std::set<const void*> staging;
        for (std::size_t i = 0; i < copies.size(); ++i) {
            EXPECT_EQ(copies[i].stream, copies[0].stream) << "one copy stream";
            EXPECT_FALSE(copies[i].pageable) << "copy " << i << " read pageable memory: the host waited for it";
            if (i % 2 == 0) staging.insert(copies[i].src);
            if (i >= 4 && i % 2 == 0) {
                EXPECT_EQ(copies[i].src, copies[i - 4].src) << "batch i reuses batch i-2's slot";
            }
            if (i >= 2 && i % 2 == 0) {
                EXPECT_NE(copies[i].src, copies[i - 2].src) << "batch i+1 has the other slot";
            }
        }
        EXPECT_EQ(staging.size(), 2u) << "two staging slots";
        // Step j's kernels: after batch j's copy, not after batch j+1's.
        const auto last_copy_of = [&](std::size_t batch) -> const TimelineEntry& { return copies[2 * batch + 1]; };
        std::vector<std::vector<TimelineEntry>> step(steps);
        for (const TimelineEntry& k : kernels)
            for (std::size_t j = 0; j < steps; ++j)
                if (happens_before(last_copy_of(j), k) && (j + 1 == steps || !happens_before(last_copy_of(j + 1), k)))
                    step[j].push_back(k);
        for (std::size_t j = 0; j < steps; ++j) {
            ASSERT_FALSE(step[j].empty()) << "step " << j << " ran no kernel after its batch's copy";
            if (j + 1 == steps) continue;
            for (const TimelineEntry& k : step[j]) {
                EXPECT_TRUE(may_overlap(copies[2 * (j + 1)], k) && may_overlap(last_copy_of(j + 1), k))
                    << "batch " << j + 1 << "'s copy is ordered against a kernel of step " << j
                    << ": they cannot overlap";
            }
            if (j >= 1) {
                for (const TimelineEntry& k : step[j - 1])
                    EXPECT_TRUE(happens_before(k, copies[2 * (j + 1)]))
                        << "batch " << j + 1 << "'s copy is not ordered after step " << j - 1 << "'s kernels";
            }
        }
    }
}

TEST_F(DeviceTraining, BatchUploaderHandsBackTheBatchAndRefusesMisuse) {
    device::BatchUploader uploader(test_device());
    EXPECT_THROW(uploader.take(), Error) << "nothing was started";
    const Batch b0{random_tensor({3, 5}, 1), from_vector<std::int32_t>({2, 0, 1}, {3})};
    const Batch b1{random_tensor({2, 5}, 2), from_vector<std::int32_t>({1, 1}, {2})};
    uploader.start(b0);
    uploader.start(b1);
    EXPECT_EQ(uploader.in_flight(), 2);
    EXPECT_THROW(uploader.start(b0), Error) << "two staging slots: a third batch must wait for a take()";
    EXPECT_THROW(uploader.start({b0.inputs.to(test_device()), b0.targets}), Error) << "a batch already on the device";
    EXPECT_NE(uploader.staging(0), uploader.staging(1));
    for (const Batch* want : {&b0, &b1}) {
        const Batch got = uploader.take();
        ASSERT_EQ(got.inputs.device(), test_device());
        EXPECT_EQ(got.inputs.cpu().to_vector<float>(), want->inputs.to_vector<float>());
        EXPECT_EQ(got.targets.cpu().to_vector<std::int32_t>(), want->targets.to_vector<std::int32_t>());
    }
    EXPECT_EQ(uploader.in_flight(), 0);
}

TEST_F(DeviceTraining, PinnedHostMemoryComesFromTheDevicesRuntime) {
    EXPECT_THROW(device::pinned_host_memory(kCpu), Error);
    PinnedMemoryProvider& pinned = device::pinned_host_memory(test_device());
    const std::size_t before = pinned.locked_bytes();
    void* p = pinned.allocate(4096);
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(pinned.locked_bytes(), before + 4096);
    if (test_device() == kCudaCpu) {
        EXPECT_TRUE(cuda::cpu::is_page_locked(p, 4096));
    }
    pinned.deallocate(p, 4096);
    EXPECT_EQ(pinned.locked_bytes(), before);
}

}  // namespace
}  // namespace gl
