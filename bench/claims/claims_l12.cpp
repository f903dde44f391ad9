// Lab 12 claim Q-1: INT8 weights are 4x smaller with little accuracy loss after
// post-training quantization, QAT recovers the rest, and INT8 GEMM is faster.
//
// One run: SimpleNet trained in FP32 on Fashion-MNIST; PTQ of it with every observer, per
// tensor and per channel (1000 calibration examples); QAT fine-tuning from it; the float
// and INT8 model files measured on disk; our best INT8 GEMM, oneDNN's INT8 GEMM and every
// FP32 GEMM (ours and the peers) at N = 1024 and 2048 on every core, and the MLP's batch
// inference in INT8 against FP32.
#include <filesystem>
#include <thread>
#include <unistd.h>

#include "autograd/grad_mode.hpp"
#include "claims.hpp"
#include "data/mnist.hpp"
#include "kernels/gemm.hpp"
#include "kernels/gemm_int8.hpp"
#include "nn/module.hpp"
#include "parallel/thread_pool.hpp"
#include "quant/model_file.hpp"
#include "quant/qat.hpp"
#include "quant/quantized_mlp.hpp"
#include "testkit/random.hpp"
#include "training/trainer.hpp"
#include "verdicts_l12.hpp"

namespace gl::claims {
namespace {

// Best-of-runs GOP/s (2 N^3 operations) of an INT8 kernel on `threads` threads, int32 out,
// A u8 with a zero point, B the [N, K] weight layout.
double measure_int8_gops(const kernels::Int8GemmKernel& k, std::int64_t n, int threads, double min_seconds) {
    const int before = get_num_threads();
    set_num_threads(threads);
    std::vector<std::uint8_t> A(static_cast<std::size_t>(n * n));
    std::vector<std::int8_t> B(A.size());
    for (std::size_t i = 0; i < A.size(); ++i) {
        A[i] = static_cast<std::uint8_t>((i * 37 + 11) % 256);
        B[i] = static_cast<std::int8_t>((i * 53 + 7) % 256 - 128);
    }
    std::vector<std::int32_t> C(A.size());
    const kernels::Int8GemmArgs g{n, n, n, A.data(), n, 3, B.data(), n, true, 0, C.data(), n, nullptr};
    std::this_thread::sleep_for(std::chrono::milliseconds(150));  // let a peer's idle threads sleep
    const double best = testkit::best_seconds([&] { k.fn(g); }, 3, min_seconds);
    set_num_threads(before);
    return 2.0 * static_cast<double>(n) * static_cast<double>(n) * static_cast<double>(n) / best * 1e-9;
}

std::vector<Int8GemmSpeed> measure_speeds(const Context& ctx, int threads, nlohmann::json& data) {
    std::vector<Int8GemmSpeed> speeds;
    const double min_s = ctx.quick ? 0.1 : 0.4;
    for (long n : {1024L, 2048L}) {
        Int8GemmSpeed s;
        s.n = n;
        s.int8_gops = measure_int8_gops(kernels::best_int8_gemm(), n, threads, min_s);
        for (const auto& k : kernels::int8_gemm_kernels())
            if (k.peer && k.available()) s.onednn_int8_gops = measure_int8_gops(k, n, threads, min_s);
        nlohmann::json fp32;
        for (const auto& k : kernels::gemm_kernels()) {
            if (k.name != "threaded" && k.name != "openblas" && k.name != "onednn" && k.name != "eigen") continue;
            const double gf = measure_gemm_gflops(k.name, n, threads, min_s);
            fp32[k.name] = gf;
            s.fp32_best_gflops = std::max(s.fp32_best_gflops, gf);
        }
        data["gemm"].push_back({{"n", n}, {"threads", threads}, {"int8_kernel", kernels::best_int8_gemm().name},
                                {"int8_gops", s.int8_gops}, {"onednn_int8_gops", s.onednn_int8_gops}, {"fp32_gflops", fp32}});
        if (ctx.log) *ctx.log << "   N = " << n << ": INT8 " << fixed(s.int8_gops, 0) << " GOP/s, oneDNN INT8 "
                              << fixed(s.onednn_int8_gops, 0) << ", best FP32 " << fixed(s.fp32_best_gflops, 0) << "\n";
        speeds.push_back(s);
    }
    return speeds;
}

// Seconds for one batch of @p batch test images through the FP32 model and the INT8 one.
std::pair<double, double> inference_seconds(nn::Sequential& net, const quant::QuantizedMlp& q, const Dataset& test,
                                            std::size_t batch) {
    std::vector<std::size_t> idx(batch);
    for (std::size_t i = 0; i < batch; ++i) idx[i] = i;
    const Tensor x = test.get_batch(idx).inputs;
    const NoGradGuard no_grad;
    const double fp32 = testkit::best_seconds([&] { net.forward(x); }, 5, 0.1);
    const double int8 = testkit::best_seconds([&] { q.forward(x); }, 5, 0.1);
    return {fp32, int8};
}

Result q1(const Context& ctx) {
    Result r;
    const std::string dir = ctx.data_dir.empty() ? default_fashion_mnist_dir().string() : ctx.data_dir;
    auto train = std::make_shared<MnistDataset>(dir, MnistSplit::Train);
    const MnistDataset test(dir, MnistSplit::Test);
    Q1Measured m;
    Rng rng(ctx.seed);
    auto net = nn::make_simple_net(rng, train->example_shape().back(), 128, train->num_classes());
    training::FitOptions fit;
    fit.epochs = ctx.quick ? 1 : 3;
    fit.seed = ctx.seed;
    training::fit(*net, train, nullptr, fit);
    m.fp32_accuracy = training::evaluate(*net, test).accuracy;
    if (ctx.log) *ctx.log << "   FP32 test accuracy " << fixed(m.fp32_accuracy, 4) << "\n";
    std::ostringstream acc;
    for (const char* observer : {"minmax", "moving_average", "percentile", "mse"})
        for (bool per_channel : {false, true}) {
            quant::PtqOptions o;
            o.observer = observer;
            o.per_channel = per_channel;
            const double a = quant::quantize_mlp(*net, *train, o).accuracy(test);
            const std::string name = std::string("PTQ ") + observer + (per_channel ? " per-channel" : " per-tensor");
            m.variants.push_back({name, a, per_channel, false});
            acc << name << " " << fixed(a, 4) << ", ";
        }
    // The files: the float model and the per-channel minmax INT8 model, on disk.
    const auto folder = std::filesystem::temp_directory_path() / ("gradlab_q1_" + std::to_string(::getpid()));
    std::filesystem::create_directories(folder);
    quant::save_float_model(*net, (folder / "fp32.glm").string());
    quant::PtqOptions best;
    const quant::QuantizedMlp q = quant::quantize_mlp(*net, *train, best);
    quant::save_quantized_model(q, (folder / "int8.glm").string());
    m.float_file_bytes = static_cast<double>(std::filesystem::file_size(folder / "fp32.glm"));
    m.int8_file_bytes = static_cast<double>(std::filesystem::file_size(folder / "int8.glm"));
    std::filesystem::remove_all(folder);
    // QAT: one epoch (a quarter of one in quick mode) of fake-quantized fine-tuning from the FP32 model.
    auto qat = quant::prepare_qat(*net, true);
    training::FitOptions qfit = fit;
    qfit.epochs = 1;
    qfit.lr = fit.lr / 10.0;
    const std::shared_ptr<const Dataset> qat_data =
        ctx.quick ? std::static_pointer_cast<const Dataset>(SubsetDataset::first(train, train->size() / 4)) : train;
    training::fit(*qat, qat_data, nullptr, qfit);
    const double qat_acc = quant::convert_qat(*qat).accuracy(test);
    m.variants.push_back({"QAT per-channel", qat_acc, true, true});
    acc << "QAT per-channel " << fixed(qat_acc, 4);
    for (const auto& v : m.variants) r.data["accuracy"][v.name] = v.accuracy;
    r.data["fp32_accuracy"] = m.fp32_accuracy;
    r.data["file_bytes"] = {{"fp32", m.float_file_bytes}, {"int8_per_channel", m.int8_file_bytes}};
    const int threads = machine_cores();
    m.speeds = measure_speeds(ctx, threads, r.data);
    const auto [fp32_s, int8_s] = inference_seconds(*net, q, test, 1000);
    r.data["inference_batch1000_seconds"] = {{"fp32", fp32_s}, {"int8", int8_s}};
    std::ostringstream out;
    out << "SimpleNet, " << fit.epochs << " FP32 epoch(s): test accuracy FP32 " << fixed(m.fp32_accuracy, 4) << "; "
        << acc.str() << ". Files: FP32 " << m.float_file_bytes << " bytes, INT8 (per channel) " << m.int8_file_bytes
        << " (" << fixed(m.float_file_bytes / m.int8_file_bytes, 2) << "x smaller). GEMM on " << threads
        << " threads, INT8 kernel " << kernels::best_int8_gemm().name << ": ";
    for (const auto& s : m.speeds)
        out << "N = " << s.n << " INT8 " << fixed(s.int8_gops, 0) << " GOP/s vs best FP32 " << fixed(s.fp32_best_gflops, 0)
            << " GFLOP/s (" << fixed(s.int8_gops / s.fp32_best_gflops, 2) << "x), oneDNN INT8 "
            << fixed(s.onednn_int8_gops, 0) << " (ours " << fixed(s.onednn_int8_gops > 0 ? s.int8_gops / s.onednn_int8_gops : 0, 2)
            << "x); ";
    out << "MLP inference of 1000 images: FP32 " << fixed(fp32_s * 1e3, 2) << " ms, INT8 " << fixed(int8_s * 1e3, 2)
        << " ms. (The CNN half of Q-1 waits for the convolution lab.)";
    r.measured = out.str();
    const Judgement j = judge_q1(m);
    r.verdict = j.verdict;
    r.why = j.why;
    return r;
}

}  // namespace

std::vector<Claim> lab12_claims() {
    return {{"Q-1", "12",
             "INT8 weights are 4x smaller with little accuracy loss; quantization-aware training recovers the rest; "
             "INT8 GEMM is faster",
             q1, true}};
}

}  // namespace gl::claims
