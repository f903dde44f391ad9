// Q-1 models: post-training quantization of a Linear/ReLU chain and its integer-only
// forward, QAT (prepare, fake-quantized training, convert), and the .glm model files
// (round trips, sizes, and every kind of damaged file refused with a clear message).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <cstring>
#include <unistd.h>
#include <vector>

#include "base/crc32.hpp"

#include "autograd/grad_mode.hpp"
#include "base/error.hpp"
#include "ops/ops.hpp"
#include "quant/model_file.hpp"
#include "quant/qat.hpp"
#include "quant/quantized_mlp.hpp"
#include "training/toy_models.hpp"
#include "training/trainer.hpp"
#include "testkit/files.hpp"

namespace gl::quant {
namespace {

// A small trained MLP on Gaussian blobs, and its data.
struct Trained {
    std::shared_ptr<nn::Sequential> net;
    std::shared_ptr<TensorDataset> data;
};

Trained trained_mlp(std::uint64_t seed = 1) {
    const auto blobs = training::make_blobs(512, 16, seed);
    Trained t;
    t.data = std::make_shared<TensorDataset>(blobs.x, blobs.y, 2);
    Rng rng(seed);
    t.net = nn::make_simple_net(rng, 16, 32, 2);
    training::FitOptions fit;
    fit.epochs = 3;
    fit.batch_size = 32;
    fit.lr = 3e-3;
    training::fit(*t.net, t.data, nullptr, fit);
    return t;
}

std::string temp_path(const std::string& name) {
    return (std::filesystem::temp_directory_path() / ("gradlab_test_" + std::to_string(::getpid()) + "_" + name)).string();
}

TEST(QuantizedMlp, BatchedInputQuantizationMatchesQuantize) {
    // Ties both ways (x / scale = k + 0.5), saturation at both ends, infinities, -0.
    const QParams p{0.25f, 7};
    std::vector<float> x;
    for (int k = -80; k <= 80; ++k) x.push_back(0.125f * static_cast<float>(k));
    for (float v : {1e6f, -1e6f, INFINITY, -INFINITY, -0.0f, 62.0f, 62.125f, 62.375f, -1.875f, -1.625f}) x.push_back(v);
    for (int i = 0; i < 40000; ++i) x.push_back(std::sin(0.37f * static_cast<float>(i)) * 40.0f);  // spans threads
    std::vector<std::uint8_t> want(x.size()), got(x.size());
    quantize(x.data(), x.size(), p, want.data());
    quantize_input(x.data(), x.size(), p, got.data());
    for (std::size_t i = 0; i < x.size(); ++i) ASSERT_EQ(int(got[i]), int(want[i])) << "x = " << x[i];
    x[30000] = NAN;
    EXPECT_THROW(quantize_input(x.data(), x.size(), p, got.data()), Error);
    EXPECT_THROW(quantize_input(x.data(), 1, QParams{0.0f, 0}, got.data()), Error);
}

TEST(QuantizedMlp, IntegerForwardTracksTheFloatModel) {
    Trained t = trained_mlp();
    for (bool per_channel : {false, true}) {
        PtqOptions o;
        o.per_channel = per_channel;
        o.calibration = 256;
        const QuantizedMlp q = quantize_mlp(*t.net, *t.data, o);
        ASSERT_EQ(q.layers.size(), 2u);
        EXPECT_TRUE(q.layers[0].relu && q.layers[0].has_output);
        EXPECT_EQ(q.layers[0].weight_params.size(), per_channel ? 32u : 1u);
        const Batch b = t.data->get_batch({0, 1, 2, 3, 4, 5, 6, 7});
        const NoGradGuard no_grad;
        const auto want = t.net->forward(b.inputs).to_vector<float>();
        const auto got = q.forward(b.inputs).to_vector<float>();
        float span = 0;
        for (float v : want) span = std::max(span, std::abs(v));
        for (std::size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 0.05f * span) << i;
        EXPECT_NEAR(q.accuracy(*t.data), training::evaluate(*t.net, *t.data).accuracy, 0.02);
    }
}

TEST(QuantizedMlp, EveryObserverCalibrates) {
    Trained t = trained_mlp();
    for (const char* obs : {"minmax", "moving_average", "percentile", "mse"}) {
        PtqOptions o;
        o.observer = obs;
        o.calibration = 128;
        EXPECT_GT(quantize_mlp(*t.net, *t.data, o).accuracy(*t.data), 0.9) << obs;
    }
    nn::Sequential bad;
    bad.add(std::make_shared<nn::ReLU>());
    EXPECT_THROW(quantize_mlp(bad, *t.data, {}), Error);
}

TEST(Qat, PrepareTrainConvert) {
    Trained t = trained_mlp();
    auto qat = prepare_qat(*t.net, true);
    EXPECT_EQ(qat->parameters().size(), t.net->parameters().size()) << "QAT layers share the float parameters";
    EXPECT_THROW(convert_qat(*qat), Error) << "the observers have seen nothing yet";
    training::FitOptions fit;
    fit.epochs = 1;
    fit.batch_size = 32;
    fit.lr = 1e-3;
    training::fit(*qat, t.data, nullptr, fit);
    const QuantizedMlp q = convert_qat(*qat);
    EXPECT_GT(q.accuracy(*t.data), 0.9);
    // The converted model computes what the fake-quantized one did, up to rounding of the sums.
    qat->train(false);
    const NoGradGuard no_grad;
    EXPECT_NEAR(q.accuracy(*t.data), training::evaluate(*qat, *t.data).accuracy, 0.02);
}

TEST(ModelFile, FloatAndInt8RoundTripExactly) {
    Trained t = trained_mlp();
    const std::string f = temp_path("float.glm"), i8 = temp_path("int8.glm");
    save_float_model(*t.net, f);
    Rng rng(99);
    auto other = nn::make_simple_net(rng, 16, 32, 2);
    load_float_model(*other, f);
    for (std::size_t p = 0; p < other->parameters().size(); ++p)
        EXPECT_EQ(other->parameters()[p].to_vector<float>(), t.net->parameters()[p].to_vector<float>());
    const QuantizedMlp q = quantize_mlp(*t.net, *t.data, {});
    save_quantized_model(q, i8);
    const QuantizedMlp back = load_quantized_model(i8);
    ASSERT_EQ(back.layers.size(), q.layers.size());
    EXPECT_EQ(back.layers[0].weight, q.layers[0].weight);
    EXPECT_EQ(back.layers[1].bias, q.layers[1].bias);
    EXPECT_EQ(back.forward(t.data->inputs()).to_vector<float>(), q.forward(t.data->inputs()).to_vector<float>());
    EXPECT_EQ(model_kind(i8), ModelKind::Int8);
    EXPECT_THROW(load_quantized_model(f), Error);
    EXPECT_THROW(load_float_model(*other, i8), Error);
    auto wrong_shape = nn::make_simple_net(rng, 16, 33, 2);
    EXPECT_THROW(load_float_model(*wrong_shape, f), Error);
    std::filesystem::remove(f);
    std::filesystem::remove(i8);
}

// SimpleNet 784-128-10: the INT8 file is 4x smaller than the float one within 5%, on disk.
TEST(ModelFile, Int8FileIsAboutFourTimesSmaller) {
    Rng rng(0);
    auto net = nn::make_simple_net(rng);
    const auto blobs = training::make_blobs(64, 784, 3);
    TensorDataset data(blobs.x, blobs.y, 2);
    const std::string f = temp_path("size_f.glm"), i8 = temp_path("size_i8.glm");
    save_float_model(*net, f);
    for (bool per_channel : {false, true}) {
        PtqOptions o;
        o.per_channel = per_channel;
        save_quantized_model(quantize_mlp(*net, data, o), i8);
        const double ratio = static_cast<double>(std::filesystem::file_size(f)) / std::filesystem::file_size(i8);
        EXPECT_NEAR(ratio, 4.0, 0.2) << "per channel " << per_channel;
    }
    std::filesystem::remove(f);
    std::filesystem::remove(i8);
}

using testkit::read_all;
using testkit::write_all;

std::string load_error(const std::string& path) {
    try {
        load_quantized_model(path);
    } catch (const Error& e) {
        return e.what();
    }
    return "";
}

TEST(ModelFile, DamagedFilesAreRefusedWithAClearMessage) {
    Trained t = trained_mlp();
    const std::string good = temp_path("good.glm"), bad = temp_path("bad.glm");
    save_quantized_model(quantize_mlp(*t.net, *t.data, {}), good);
    const std::vector<char> bytes = read_all(good);
    // Every truncation (a sample of lengths, all of the short ones).
    for (std::size_t n = 0; n < bytes.size(); n += (n < 64 ? 1 : 97)) {
        write_all(bad, {bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(n)});
        const std::string e = load_error(bad);
        ASSERT_FALSE(e.empty()) << "a file cut to " << n << " bytes loaded";
        EXPECT_TRUE(e.find("truncated") != std::string::npos || e.find("signature") != std::string::npos) << e;
    }
    // A flipped bit anywhere.
    for (std::size_t i = 0; i < bytes.size(); i += 41) {
        std::vector<char> b = bytes;
        b[i] ^= 0x10;
        write_all(bad, b);
        EXPECT_FALSE(load_error(bad).empty()) << "a flipped bit at byte " << i << " went unnoticed";
    }
    std::vector<char> extra = bytes;
    extra.push_back('x');
    write_all(bad, extra);
    EXPECT_NE(load_error(bad).find("after the trailer"), std::string::npos);
    write_all(bad, std::vector<char>(100, 'z'));
    EXPECT_NE(load_error(bad).find("not a gradlab model"), std::string::npos);
    EXPECT_NE(load_error(temp_path("missing.glm")).find("no such file"), std::string::npos);
    std::filesystem::remove(good);
    std::filesystem::remove(bad);
}

TEST(ModelFile, AnotherVersionIsNamed) {
    Trained t = trained_mlp();
    const std::string path = temp_path("version.glm");
    save_float_model(*t.net, path);
    std::vector<char> b = read_all(path);
    b[8] = 3;  // version 3, with the header checksum fixed so only the version is wrong
    const std::uint32_t crc = crc32(b.data(), 20);
    std::memcpy(b.data() + 20, &crc, 4);
    write_all(path, b);
    try {
        load_float_model(*t.net, path);
        FAIL() << "version 3 loaded";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("version 3"), std::string::npos) << e.what();
    }
    std::filesystem::remove(path);
}

}  // namespace
}  // namespace gl::quant
