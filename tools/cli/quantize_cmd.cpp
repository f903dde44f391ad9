// `gradlab quantize` and `gradlab train --qat` (claim Q-1).
#include "quantize_cmd.hpp"

#include <fmt/core.h>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <optional>

#include "base/error.hpp"
#include "base/rng.hpp"
#include "data/mnist.hpp"
#include "kernels/gemm_int8.hpp"
#include "nn/conv_layers.hpp"
#include "quant/model_file.hpp"
#include "quant/qat.hpp"
#include "quant/quantized_cnn.hpp"
#include "quant/quantized_mlp.hpp"

namespace gl::cli {

std::uintmax_t file_bytes(const std::string& path) { return std::filesystem::file_size(path); }

int cmd_quantize(const QuantizeArgs& a) {
    // Everything that can be wrong is found before the first line of output.
    if (!a.out.empty()) {
        const auto folder = std::filesystem::absolute(a.out).parent_path();
        check(std::filesystem::is_directory(folder) && access(folder.c_str(), W_OK) == 0,
              "--out " + a.out + ": cannot write in " + folder.string() + "; choose another path");
    }
    check(quant::model_kind(a.model) == quant::ModelKind::Float,
          "--model " + a.model + " is already an INT8 model; give a float model saved by `gradlab train --save`");
    const std::string dir = a.data.empty() ? default_fashion_mnist_dir().string() : a.data;
    const MnistDataset train(dir, MnistSplit::Train);
    const MnistDataset test(dir, MnistSplit::Test);
    // The float file says which network it holds: a 4-d parameter is a convolution.
    const bool cnn = quant::is_float_cnn(a.model);
    const std::int64_t features = train.example_shape().back();
    const auto side = static_cast<std::int64_t>(std::lround(std::sqrt(static_cast<double>(features))));
    check(!cnn || (side * side == features && side % 4 == 0),
          "--model " + a.model + " holds a CNN, which needs square images with a side divisible by 4; these have " +
              std::to_string(features) + " values");
    Rng rng(0);
    auto net = cnn ? nn::make_cnn(rng, side, 32, 64, 128, train.num_classes())
                   : nn::make_simple_net(rng, features, 128, train.num_classes());
    quant::load_float_model(*net, a.model);
    fmt::print("model:  {} from {} ({} bytes)\n", net->describe(), a.model, file_bytes(a.model));
    const double fp32 = training::evaluate(*net, test).accuracy;
    quant::PtqOptions o;
    o.observer = a.observer;
    o.per_channel = a.per_channel;
    o.calibration = static_cast<std::size_t>(a.calibrate);
    std::optional<quant::QuantizedMlp> mlp;
    std::optional<quant::QuantizedCnn> conv;
    if (cnn) conv = quant::quantize_cnn(*net, train, o);
    else mlp = quant::quantize_mlp(*net, train, o);
    fmt::print("PTQ:    {} calibration examples, {} observer on activations, weights {} (INT8 GEMM: {})\n",
               std::min<std::size_t>(o.calibration, train.size()), a.observer,
               a.per_channel ? "per channel" : "per tensor", kernels::best_int8_gemm().name);
    const double int8 = cnn ? conv->accuracy(test) : mlp->accuracy(test);
    fmt::print("test accuracy: FP32 {:.4f}  INT8 {:.4f}  (difference {:+.2f} points)\n", fp32, int8,
               100.0 * (int8 - fp32));
    if (!a.out.empty()) {
        if (cnn) quant::save_quantized_model(*conv, a.out);
        else quant::save_quantized_model(*mlp, a.out);
        fmt::print("written: {} ({} bytes, {:.2f}x smaller than the float file)\n", a.out, file_bytes(a.out),
                   static_cast<double>(file_bytes(a.model)) / static_cast<double>(file_bytes(a.out)));
    }
    return 0;
}

void qat_finetune(nn::Sequential& net, const std::shared_ptr<const Dataset>& train, const Dataset& test,
                  training::FitOptions fit, int epochs, bool per_channel, const std::string& save) {
    auto qat = quant::prepare_qat(net, per_channel);
    fit.epochs = epochs;
    fit.lr /= 10.0;  // fine-tuning: small steps from a trained model
    fmt::print("QAT:    {} epoch(s) with fake quantization (weights {}), lr {}\n", epochs,
               per_channel ? "per channel" : "per tensor", fit.lr);
    training::fit(*qat, train, &test, fit, [&](const training::EpochReport& e) {
        fmt::print("QAT epoch {}/{}  train loss {:.4f}  fake-quantized test acc {:.4f}\n", e.epoch, epochs, e.train_loss,
                   e.test.accuracy);
    });
    const auto report = [&](const auto& q) {
        fmt::print("QAT -> INT8: test accuracy {:.4f} (integer-only inference)\n", q.accuracy(test));
        if (save.empty()) return;
        quant::save_quantized_model(q, save);
        fmt::print("written: {} ({} bytes)\n", save, file_bytes(save));
    };
    if (quant::has_conv(net)) report(quant::convert_qat_cnn(*qat));
    else report(quant::convert_qat(*qat));
}

}  // namespace gl::cli
