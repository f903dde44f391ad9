// Q-1's CNN half: UINT8 im2col (padding with the zero point) and max pooling, a quantized
// convolution against the float convolution of the same quantized values on odd shapes,
// PTQ and QAT of a small CNN, and CNN model files (round trip, size, damaged files).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <unistd.h>
#include <vector>

#include "autograd/grad_mode.hpp"
#include "base/error.hpp"
#include "nn/conv_layers.hpp"
#include "ops/conv.hpp"
#include "ops/ops.hpp"
#include "quant/model_file.hpp"
#include "quant/qat.hpp"
#include "quant/quantized_cnn.hpp"
#include "training/toy_models.hpp"
#include "training/trainer.hpp"
#include "testkit/files.hpp"

namespace gl::quant {
namespace {

std::vector<std::uint8_t> random_u8(std::size_t n, unsigned seed) {
    std::mt19937 gen(seed);
    std::uniform_int_distribution<int> d(0, 255);
    std::vector<std::uint8_t> v(n);
    for (auto& x : v) x = static_cast<std::uint8_t>(d(gen));
    return v;
}

std::vector<float> random_floats(std::size_t n, float lo, float hi, unsigned seed) {
    std::mt19937 gen(seed);
    std::uniform_real_distribution<float> d(lo, hi);
    std::vector<float> v(n);
    for (auto& x : v) x = d(gen);
    return v;
}

TEST(Im2colU8, PatchesOfNhwcImagesPaddedWithTheZeroPoint) {
    for (const ConvShape& s : {ConvShape{2, 5, 7, 3, 3, 1, 1}, ConvShape{3, 9, 6, 2, 3, 2, 1}, ConvShape{1, 4, 4, 5, 2, 2, 0},
                               ConvShape{2, 3, 5, 1, 5, 1, 2}, ConvShape{1, 4, 5, 11, 3, 1, 1}}) {
        const std::vector<std::uint8_t> x = random_u8(static_cast<std::size_t>(s.images * s.height * s.width * s.channels), 1);
        const std::int64_t P = s.out_height(), Q = s.out_width();
        std::vector<std::uint8_t> cols(static_cast<std::size_t>(s.images * P * Q * s.patch()), 1);
        const std::uint8_t zp = 37;
        im2col_u8(x.data(), s, zp, cols.data());
        std::int64_t padded = 0;
        for (std::int64_t n = 0; n < s.images; ++n)
            for (std::int64_t p = 0; p < P; ++p)
                for (std::int64_t q = 0; q < Q; ++q)
                    for (std::int64_t r = 0; r < s.kernel; ++r)
                        for (std::int64_t t = 0; t < s.kernel; ++t)
                            for (std::int64_t c = 0; c < s.channels; ++c) {
                                const std::int64_t h = p * s.stride - s.padding + r, w = q * s.stride - s.padding + t;
                                const bool outside = h < 0 || h >= s.height || w < 0 || w >= s.width;
                                padded += outside;
                                const int want = outside ? zp : x[((n * s.height + h) * s.width + w) * s.channels + c];
                                const std::int64_t row = (n * P + p) * Q + q, col = (r * s.kernel + t) * s.channels + c;
                                ASSERT_EQ(int(cols[row * s.patch() + col]), want)
                                    << "image " << n << " pixel (" << p << ", " << q << ") tap (" << r << ", " << t
                                    << ") channel " << c;
                            }
        EXPECT_EQ(padded > 0, s.padding > 0) << "the shapes with padding must reach it";
    }
}

TEST(MaxPoolU8, LargestByteOfEachWindowPerChannel) {
    // Odd sides (the last row and column are dropped), windows of 2 and 3, channel runs
    // shorter and longer than the 8 bytes copied at a time.
    for (const auto& [C, k] : {std::pair<std::int64_t, std::int64_t>{3, 2}, {1, 2}, {17, 3}}) {
        const std::int64_t N = 2, H = 7, W = 5;
        const std::vector<std::uint8_t> x = random_u8(N * H * W * C, 2);
        std::vector<std::uint8_t> y(N * (H / k) * (W / k) * C);
        max_pool_u8(x.data(), N, H, W, C, k, y.data());
        for (std::int64_t n = 0; n < N; ++n)
            for (std::int64_t p = 0; p < H / k; ++p)
                for (std::int64_t q = 0; q < W / k; ++q)
                    for (std::int64_t c = 0; c < C; ++c) {
                        int want = 0;
                        for (std::int64_t r = 0; r < k; ++r)
                            for (std::int64_t t = 0; t < k; ++t)
                                want = std::max(want, int(x[((n * H + p * k + r) * W + q * k + t) * C + c]));
                        ASSERT_EQ(int(y[((n * (H / k) + p) * (W / k) + q) * C + c]), want)
                            << C << " channels, window " << k;
                    }
    }
}

// Float NCHW -> UINT8 NHWC with parameters @p p.
std::vector<std::uint8_t> to_nhwc_u8(const std::vector<float>& x, std::int64_t N, std::int64_t C, std::int64_t HW, QParams p) {
    std::vector<std::uint8_t> q(x.size()), out(x.size());
    quantize(x.data(), x.size(), p, q.data());
    for (std::int64_t n = 0; n < N; ++n)
        for (std::int64_t c = 0; c < C; ++c)
            for (std::int64_t i = 0; i < HW; ++i) out[(n * HW + i) * C + c] = q[(n * C + c) * HW + i];
    return out;
}

// The quantized convolution computes, in integers, the float convolution of the values
// its quantized input and weights stand for; the only differences are the rounding of
// the bias to INT32 and of the output to UINT8 (half an output step), so the test checks
// every output against that float convolution within half a step and a hair. Odd sizes,
// strides, padding, per-tensor and per-channel weights, with and without ReLU and pooling.
TEST(QuantizedConv2d, MatchesTheFloatConvolutionOfTheQuantizedValues) {
    struct Case {
        std::int64_t N, C, H, W, K, k, stride, padding, pool;
        bool relu, per_channel;
    };
    for (const Case& c : {Case{2, 3, 9, 7, 5, 3, 1, 1, 1, false, true}, Case{3, 5, 11, 10, 6, 3, 2, 1, 1, true, false},
                          Case{1, 1, 12, 12, 4, 3, 1, 1, 2, true, true}, Case{2, 7, 6, 9, 3, 1, 1, 0, 2, false, false},
                          Case{1, 2, 8, 7, 9, 5, 1, 2, 3, true, true}}) {
        const std::vector<float> x = random_floats(c.N * c.C * c.H * c.W, -1.0f, 3.0f, 3);
        const std::vector<float> w = random_floats(c.K * c.C * c.k * c.k, -0.4f, 0.4f, 4);
        const std::vector<float> b = random_floats(c.K, -0.5f, 0.5f, 5);
        const QParams in = choose_qparams(-1.0f, 3.0f, kUint8, QScheme::Asymmetric);
        // The reference: the float convolution of the dequantized input and weights.
        std::vector<float> xd(x.size());
        {
            std::vector<std::uint8_t> q(x.size());
            quantize(x.data(), x.size(), in, q.data());
            dequantize(q.data(), q.size(), in, xd.data());
        }
        QuantizedConv2d layer = quantize_conv2d(from_vector(w, {c.K, c.C, c.k, c.k}), from_vector(b, {c.K}), c.stride,
                                                c.padding, in, c.relu, c.pool, QParams{1.0f, 0}, c.per_channel);
        std::vector<float> wd(w.size());  // [K, C, k, k] from the layer's [K, k, k, C]
        const std::int64_t RS = c.k * c.k;
        for (std::int64_t k = 0; k < c.K; ++k)
            for (std::int64_t ch = 0; ch < c.C; ++ch)
                for (std::int64_t rs = 0; rs < RS; ++rs)
                    wd[(k * c.C + ch) * RS + rs] =
                        dequantize_value(layer.weight[(k * RS + rs) * c.C + ch], layer.weight_param(k));
        Conv2dOptions o;
        o.stride = {c.stride, c.stride};
        o.padding = {c.padding, c.padding};
        const NoGradGuard no_grad;
        Tensor ref = conv2d(from_vector(xd, {c.N, c.C, c.H, c.W}), from_vector(wd, {c.K, c.C, c.k, c.k}), from_vector(b, {c.K}), o);
        if (c.relu) ref = relu(ref);
        if (c.pool > 1) ref = max_pool2d(ref, c.pool);
        const std::vector<float> want = ref.to_vector<float>();
        float lo = 0, hi = 0;
        for (float v : want) lo = std::min(lo, v), hi = std::max(hi, v);
        layer.output = choose_qparams(lo, hi, kUint8, QScheme::Asymmetric);  // no clipping
        std::int64_t h = c.H, wid = c.W;
        const std::vector<std::uint8_t> y = layer.forward(to_nhwc_u8(x, c.N, c.C, c.H * c.W, in), c.N, h, wid);
        ASSERT_EQ(h, ref.shape()[2]);
        ASSERT_EQ(wid, ref.shape()[3]);
        const float bias_step = in.scale * layer.weight_param(0).scale;
        const float tol = 0.5f * layer.output.scale + bias_step + 1e-4f * (hi - lo);
        for (std::int64_t n = 0; n < c.N; ++n)
            for (std::int64_t k = 0; k < c.K; ++k)
                for (std::int64_t i = 0; i < h * wid; ++i) {
                    const float got = dequantize_value(y[((n * h * wid) + i) * c.K + k], layer.output);
                    ASSERT_NEAR(got, want[(n * c.K + k) * h * wid + i], tol)
                        << "image " << n << " filter " << k << " pixel " << i << " (N " << c.N << " C " << c.C << " "
                        << c.H << "x" << c.W << " K " << c.K << " k " << c.k << " stride " << c.stride << " pad "
                        << c.padding << " pool " << c.pool << ")";
                }
    }
}

// A small trained CNN on 8x8 "images" (Gaussian blobs of 64 values), and its data.
struct TrainedCnn {
    std::shared_ptr<nn::Sequential> net;
    std::shared_ptr<TensorDataset> data;
};

TrainedCnn trained_cnn() {
    const auto blobs = training::make_blobs(384, 64, 5);
    TrainedCnn t;
    t.data = std::make_shared<TensorDataset>(blobs.x, blobs.y, 2);
    Rng rng(5);
    t.net = nn::make_cnn(rng, 8, 4, 6, 16, 2);
    training::FitOptions fit;
    fit.epochs = 2;
    fit.batch_size = 32;
    fit.lr = 3e-3;
    training::fit(*t.net, t.data, nullptr, fit);
    return t;
}

TEST(QuantizedCnn, IntegerForwardTracksTheFloatModel) {
    TrainedCnn t = trained_cnn();
    const double fp32 = training::evaluate(*t.net, *t.data).accuracy;
    ASSERT_GT(fp32, 0.9) << "the float CNN did not learn the blobs";
    for (bool per_channel : {false, true})
        for (const char* observer : {"minmax", "mse"}) {
            PtqOptions o;
            o.per_channel = per_channel;
            o.observer = observer;
            o.calibration = 128;
            const QuantizedCnn q = quantize_cnn(*t.net, *t.data, o);
            ASSERT_EQ(q.convs.size(), 2u);
            ASSERT_EQ(q.head.layers.size(), 2u);
            EXPECT_EQ(q.convs[1].weight_params.size(), per_channel ? 6u : 1u);
            EXPECT_TRUE(q.convs[0].relu && q.convs[0].pool == 2);
            const Batch b = t.data->get_batch({0, 1, 2, 3, 4, 5, 6, 7});
            const NoGradGuard no_grad;
            const auto want = t.net->forward(b.inputs).to_vector<float>();
            const auto got = q.forward(b.inputs).to_vector<float>();
            float span = 0;
            for (float v : want) span = std::max(span, std::abs(v));
            for (std::size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 0.1f * span) << i << " " << observer;
            EXPECT_NEAR(q.accuracy(*t.data), fp32, 0.03) << observer << " per channel " << per_channel;
        }
}

TEST(QuantizedCnn, RefusesNetworksItCannotRun) {
    TrainedCnn t = trained_cnn();
    Rng rng(1);
    auto no_image = std::make_shared<nn::Sequential>();
    no_image->add(std::make_shared<nn::Conv2d>(1, 2, 3, rng)).add(std::make_shared<nn::Flatten>());
    EXPECT_THROW(quantize_cnn(*no_image, *t.data, {}), Error);
    auto strided_pool = std::make_shared<nn::Sequential>();
    strided_pool->add(std::make_shared<nn::ToImage>(8)).add(std::make_shared<nn::Conv2d>(1, 2, 3, rng));
    strided_pool->add(std::make_shared<nn::MaxPool2d>(3, 2)).add(std::make_shared<nn::Flatten>());
    strided_pool->add(std::make_shared<nn::Linear>(18, 2, rng));
    try {
        quantize_cnn(*strided_pool, *t.data, {});
        FAIL() << "a pooling with stride 2 and window 3 was quantized";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("stride"), std::string::npos) << e.what();
    }
}

TEST(Qat, CnnPrepareTrainConvert) {
    TrainedCnn t = trained_cnn();
    auto qat = prepare_qat(*t.net, true);
    EXPECT_EQ(qat->parameters().size(), t.net->parameters().size()) << "QAT layers share the float parameters";
    EXPECT_THROW(convert_qat_cnn(*qat), Error) << "the observers have seen nothing yet";
    training::FitOptions fit;
    fit.epochs = 1;
    fit.batch_size = 32;
    fit.lr = 3e-4;
    training::fit(*qat, t.data, nullptr, fit);
    const QuantizedCnn q = convert_qat_cnn(*qat);
    EXPECT_GT(q.accuracy(*t.data), 0.9);
    qat->train(false);
    const NoGradGuard no_grad;
    EXPECT_NEAR(q.accuracy(*t.data), training::evaluate(*qat, *t.data).accuracy, 0.03)
        << "the INT8 CNN computes what the fake-quantized one did, up to the rounding of sums";
}

std::string temp_path(const std::string& name) {
    return (std::filesystem::temp_directory_path() / ("gradlab_cnn_test_" + std::to_string(::getpid()) + "_" + name)).string();
}

using testkit::read_all;
using testkit::write_all;

std::string load_error(const std::string& path) {
    try {
        load_quantized_cnn(path);
    } catch (const Error& e) {
        return e.what();
    }
    return "";
}

TEST(CnnModelFile, RoundTripsExactly) {
    TrainedCnn t = trained_cnn();
    const std::string f = temp_path("float.glm"), i8 = temp_path("int8.glm");
    save_float_model(*t.net, f);
    EXPECT_TRUE(is_float_cnn(f));
    PtqOptions o;
    o.calibration = 64;
    const QuantizedCnn q = quantize_cnn(*t.net, *t.data, o);
    save_quantized_model(q, i8);
    EXPECT_TRUE(is_quantized_cnn(i8));
    EXPECT_FALSE(is_float_cnn(i8));
    const QuantizedCnn back = load_quantized_cnn(i8);
    ASSERT_EQ(back.convs.size(), q.convs.size());
    for (std::size_t l = 0; l < q.convs.size(); ++l) {
        EXPECT_EQ(back.convs[l].weight, q.convs[l].weight);
        EXPECT_EQ(back.convs[l].bias, q.convs[l].bias);
        EXPECT_EQ(back.convs[l].pool, q.convs[l].pool);
        EXPECT_EQ(back.convs[l].padding, q.convs[l].padding);
    }
    EXPECT_EQ(back.forward(t.data->inputs()).to_vector<float>(), q.forward(t.data->inputs()).to_vector<float>());
    EXPECT_NE(std::string([&] {
                  try {
                      load_quantized_model(i8);
                  } catch (const Error& e) {
                      return std::string(e.what());
                  }
                  return std::string();
              }())
                  .find("CNN"),
              std::string::npos)
        << "the MLP loader names what the file holds";
    std::filesystem::remove(f);
    std::filesystem::remove(i8);
}

// The Fashion-MNIST CNN of `train --model cnn`: the INT8 file is 4x smaller within 5%.
TEST(CnnModelFile, Int8FileIsAboutFourTimesSmaller) {
    Rng rng(0);
    auto net = nn::make_cnn(rng);
    const auto blobs = training::make_blobs(16, 784, 3);
    TensorDataset data(blobs.x, blobs.y, 2);
    const std::string f = temp_path("size_f.glm"), i8 = temp_path("size_i8.glm");
    save_float_model(*net, f);
    for (bool per_channel : {false, true}) {
        PtqOptions o;
        o.per_channel = per_channel;
        o.calibration = 16;
        save_quantized_model(quantize_cnn(*net, data, o), i8);
        const double ratio = static_cast<double>(std::filesystem::file_size(f)) / std::filesystem::file_size(i8);
        EXPECT_NEAR(ratio, 4.0, 0.2) << "per channel " << per_channel;
    }
    std::filesystem::remove(f);
    std::filesystem::remove(i8);
}

TEST(CnnModelFile, DamagedFilesAreRefusedWithAClearMessage) {
    TrainedCnn t = trained_cnn();
    const std::string good = temp_path("good.glm"), bad = temp_path("bad.glm");
    PtqOptions o;
    o.calibration = 64;
    save_quantized_model(quantize_cnn(*t.net, *t.data, o), good);
    const std::vector<char> bytes = read_all(good);
    for (std::size_t n = 0; n < bytes.size(); n += (n < 64 ? 1 : 89)) {
        write_all(bad, {bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(n)});
        const std::string e = load_error(bad);
        ASSERT_FALSE(e.empty()) << "a file cut to " << n << " bytes loaded";
        EXPECT_TRUE(e.find("truncated") != std::string::npos || e.find("signature") != std::string::npos) << e;
    }
    for (std::size_t i = 0; i < bytes.size(); i += 37) {
        std::vector<char> b = bytes;
        b[i] ^= 0x04;
        write_all(bad, b);
        EXPECT_FALSE(load_error(bad).empty()) << "a flipped bit at byte " << i << " went unnoticed";
    }
    std::filesystem::remove(good);
    std::filesystem::remove(bad);
}

// Files whose checksums are right but whose layers cannot run (a forged or buggy writer):
// each is refused, saying what is wrong.
TEST(CnnModelFile, LayersThatDoNotFitAreRefused) {
    TrainedCnn t = trained_cnn();
    const std::string good = temp_path("fit_good.glm"), bad = temp_path("fit_bad.glm");
    PtqOptions o;
    o.calibration = 64;
    save_quantized_model(quantize_cnn(*t.net, *t.data, o), good);
    ModelKind kind;
    const std::vector<ModelRecord> records = load_records(good, kind);
    ASSERT_EQ(records[1].name, "0.conv");
    const auto forged = [&](auto change, const std::string& expect) {
        std::vector<ModelRecord> r = records;
        change(r);
        save_records(bad, kind, r);
        const std::string e = load_error(bad);
        EXPECT_NE(e.find(expect), std::string::npos) << "expected '" << expect << "' in: " << e;
    };
    const auto set_geometry = [](std::vector<ModelRecord>& r, int field, std::int32_t v) {
        std::memcpy(r[1].payload.data() + 4 * field, &v, 4);
    };
    forged([&](auto& r) { set_geometry(r, 2, 7); }, "impossible kernel");     // padding 7 for a 3x3 kernel
    forged([&](auto& r) { set_geometry(r, 3, 0); }, "impossible kernel");     // pooling 0
    forged([&](auto& r) { set_geometry(r, 3, 64); }, "does not fit");         // a pooling larger than the image
    forged([&](auto& r) { r[0].payload[0] = 3; }, "takes 1 channels");        // 3-channel images into a 1-channel conv
    forged([&](auto& r) { r.erase(r.begin() + 1, r.begin() + 6); }, "no convolution");  // the first one dropped
    forged([&](auto& r) { r[4].qparams[0].scale = -1.0f; }, "out of range");   // the input scale negative
    std::filesystem::remove(good);
    std::filesystem::remove(bad);
}

}  // namespace
}  // namespace gl::quant
