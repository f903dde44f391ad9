// Unit tests: the training loop, its determinism, and the machine probes.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "data/dataset.hpp"
#include "sys/cpu_info.hpp"
#include "sys/cuda_info.hpp"
#include "training/toy_models.hpp"
#include "training/trainer.hpp"

namespace gl {
namespace {

std::shared_ptr<const Dataset> blob_dataset(std::uint64_t seed) {
    const training::Blobs b = training::make_blobs(512, 8, seed);
    return std::make_shared<TensorDataset>(b.x, b.y, 2);
}

std::vector<training::EpochReport> train_blobs(std::uint64_t seed) {
    Rng rng(seed);
    nn::Sequential net({std::make_shared<nn::Linear>(8, 16, rng), std::make_shared<nn::ReLU>(),
                        std::make_shared<nn::Linear>(16, 2, rng)});
    const auto data = blob_dataset(1);
    training::FitOptions options;
    options.epochs = 3;
    options.batch_size = 32;
    options.seed = seed;
    return training::fit(net, data, data.get(), options);
}

TEST(Training, SameSeedSameNumbers) {
    const auto a = train_blobs(3);
    const auto b = train_blobs(3);
    ASSERT_EQ(a.size(), 3u);
    for (std::size_t e = 0; e < a.size(); ++e) {
        EXPECT_EQ(a[e].train_loss, b[e].train_loss) << "epoch " << e + 1;
        EXPECT_EQ(a[e].test.accuracy, b[e].test.accuracy) << "epoch " << e + 1;
    }
    EXPECT_NE(train_blobs(4)[0].train_loss, a[0].train_loss) << "another seed, other numbers";
}

TEST(Training, LearnsAndReportsProgress) {
    Rng rng(0);
    nn::Sequential net({std::make_shared<nn::Linear>(8, 2, rng)});
    const auto data = blob_dataset(2);
    DataLoaderOptions lo;
    lo.batch_size = 64;
    const DataLoader loader(data, lo);
    auto opt = training::make_optimizer("sgd", net.parameters(), 0.05);
    std::size_t calls = 0, last_total = 0;
    const training::EvalResult before = training::evaluate(net, *data);
    training::EpochReport r;
    for (int e = 1; e <= 3; ++e)
        r = training::train_epoch(net, *opt, loader, e, [&](std::size_t, std::size_t total, double) {
            ++calls;
            last_total = total;
        });
    EXPECT_EQ(calls, 3 * loader.num_batches());
    EXPECT_EQ(last_total, loader.num_batches());
    const training::EvalResult after = training::evaluate(net, *data);
    EXPECT_LT(after.loss, before.loss);
    EXPECT_GE(after.accuracy, 0.95);
    EXPECT_EQ(after.examples, 512);
    EXPECT_GT(r.samples_per_second, 0.0);
    EXPECT_THROW(training::make_optimizer("lbfgs", net.parameters(), 0.1), Error);
}

TEST(Training, ASetUpThatCannotWorkIsRejectedBeforeTraining) {
    const auto data = blob_dataset(1);
    const TensorDataset empty_set(empty({0, 8}), empty({0}, DType::Int32), 2);
    const training::Blobs wide = training::make_blobs(4, 9, 1);
    const TensorDataset other_shape(wide.x, wide.y, 2);
    const training::FitOptions ok;
    EXPECT_NO_THROW(training::check_fit(data.get(), data.get(), ok));
    EXPECT_NO_THROW(training::check_fit(data.get(), nullptr, ok));
    using ::testing::HasSubstr;
    using ::testing::ThrowsMessage;
    EXPECT_THAT([&] { training::check_fit(data.get(), &empty_set, ok); },
                ThrowsMessage<Error>(HasSubstr("the test set is empty")));
    EXPECT_THAT([&] { training::check_fit(&empty_set, data.get(), ok); },
                ThrowsMessage<Error>(HasSubstr("the training set is empty")));
    EXPECT_THAT([&] { training::check_fit(data.get(), &other_shape, ok); },
                ThrowsMessage<Error>(HasSubstr("test examples have shape [9], training examples [8]")));
    training::FitOptions bad = ok;
    bad.lr = std::nan("");
    EXPECT_THAT([&] { training::check_fit(data.get(), data.get(), bad); },
                ThrowsMessage<Error>(HasSubstr("learning rate must be a finite number")));
    bad = ok;
    bad.epochs = 0;
    EXPECT_THAT([&] { training::check_fit(data.get(), data.get(), bad); },
                ThrowsMessage<Error>(HasSubstr("epochs must be at least 1")));
    bad = ok;
    bad.batch_size = 0;
    EXPECT_THAT([&] { training::check_fit(data.get(), data.get(), bad); },
                ThrowsMessage<Error>(HasSubstr("batch_size must be at least 1")));
}

TEST(Training, FitRejectsAnEmptyTestSetBeforeTheFirstEpoch) {
    Rng rng(0);
    nn::Linear net(8, 2, rng);
    const auto data = blob_dataset(1);
    const TensorDataset empty_set(empty({0, 8}), empty({0}, DType::Int32), 2);
    int epochs_run = 0;
    training::FitOptions options;
    options.epochs = 1;
    EXPECT_THROW(training::fit(net, data, &empty_set, options, [&](const auto&) { ++epochs_run; }), Error);
    EXPECT_EQ(epochs_run, 0);
    EXPECT_THROW(training::evaluate(net, empty_set), Error) << "an accuracy of no examples is not 0";
}

TEST(Machine, CpuFeaturesAreConsistent) {
    const sys::CpuInfo& cpu = sys::cpu_info();
    EXPECT_GE(cpu.logical_cpus, 1);
    EXPECT_FALSE(cpu.vendor.empty());
    const sys::CpuFeatures& f = cpu.features;
    // Each extension implies the base it extends (what a dispatcher relies on).
    EXPECT_TRUE(!f.avx2 || f.avx);
    EXPECT_TRUE(!(f.avx512bw || f.avx512vl || f.avx512_vnni || f.avx512_bf16 || f.avx512_fp16) || f.avx512f);
    EXPECT_TRUE(!(f.amx_bf16 || f.amx_int8) || f.amx_tile);
    EXPECT_EQ(sys::feature_names(f).size() + sys::missing_feature_names(f).size(), 14u);
}

TEST(Machine, CudaReportExplainsMissingDevices) {
    const sys::CudaReport r = sys::cuda_report();
    if (r.devices.empty()) {
        EXPECT_FALSE(r.reason.empty()) << "with no device, the report must say why";
    } else {
        for (const auto& d : r.devices) EXPECT_TRUE(d.smoke_kernel_ran) << d.name;
    }
}

}  // namespace
}  // namespace gl
