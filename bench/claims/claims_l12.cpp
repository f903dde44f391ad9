// Lab 12 claim Q-1: INT8 weights are 4x smaller with little accuracy loss after
// post-training quantization, QAT recovers the rest, and INT8 GEMM is faster.
//
// One run, for each of SimpleNet (the MLP) and the CNN of `train --model cnn`: the model
// trained in FP32 on Fashion-MNIST; PTQ of it with every observer, per tensor and per
// channel; QAT fine-tuning from it; the float and INT8 model files measured on disk;
// batch inference in INT8 against FP32. Then our best INT8 GEMM, oneDNN's INT8 GEMM and
// every FP32 GEMM (ours and the peers) at N = 1024 and 2048 on every core.
//
// Quick mode keeps the CNN cheap (it costs ~40x the MLP per image): it trains on 2000
// images for one epoch, calibrates on 250, fine-tunes with QAT on 1000 and tests on the
// first 1000 test images (the full run: 20000 images for 2 epochs, 1000, 10000, all
// 10000). The accuracies are then lower, but FP32, PTQ and QAT are compared on the same
// model and the same test images.
#include <cmath>
#include <algorithm>
#include <filesystem>
#include <map>
#include <thread>
#include <unistd.h>

#include "autograd/grad_mode.hpp"
#include "base/aligned_vector.hpp"
#include "claims.hpp"
#include "data/mnist.hpp"
#include "kernels/gemm.hpp"
#include "kernels/gemm_int8.hpp"
#include "nn/conv_layers.hpp"
#include "nn/module.hpp"
#include "parallel/thread_pool.hpp"
#include "quant/model_file.hpp"
#include "quant/qat.hpp"
#include "quant/quantized_cnn.hpp"
#include "quant/quantized_mlp.hpp"
#include "testkit/random.hpp"
#include "training/trainer.hpp"
#include "verdicts_l12.hpp"

namespace gl::claims {
namespace {

// Best-of-@p reps GOP/s (2 N^3 operations) of an INT8 kernel on `threads` threads, int32
// out, A u8 with a zero point, B the [N, K] weight layout; with @p prepacked, B packed
// once beforehand (as a quantized layer's weights are), else packed inside every call
// (as the FP32 GEMMs and oneDNN's u8s8s32 GEMM pack theirs).
double measure_int8_gops(const kernels::Int8GemmKernel& k, std::int64_t n, int threads, int reps, double min_seconds,
                         bool prepacked = false) {
    const int before = get_num_threads();
    set_num_threads(threads);
    // Operands aligned like a tensor's storage (base/aligned_vector.hpp).
    AlignedVector<std::uint8_t> A(static_cast<std::size_t>(n * n));
    AlignedVector<std::int8_t> B(A.size());
    for (std::size_t i = 0; i < A.size(); ++i) {
        A[i] = static_cast<std::uint8_t>((i * 37 + 11) % 256);
        B[i] = static_cast<std::int8_t>((i * 53 + 7) % 256 - 128);
    }
    AlignedVector<std::int32_t> C(A.size());
    kernels::Int8GemmArgs g{n, n, n, A.data(), n, 3, B.data(), n, true, 0, C.data(), n, nullptr};
    const kernels::Int8PackedB packed = prepacked ? kernels::pack_int8_weights(k, g) : kernels::Int8PackedB{};
    if (prepacked) g.packed_b = &packed;
    std::this_thread::sleep_for(std::chrono::milliseconds(150));  // let a peer's idle threads sleep
    const double best = testkit::best_seconds([&] { k.fn(g); }, reps, min_seconds);
    set_num_threads(before);
    return 2.0 * static_cast<double>(n) * static_cast<double>(n) * static_cast<double>(n) / best * 1e-9;
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

// Every kernel at N = 1024 and 2048 in alternating rounds (each round times each kernel
// once, best of a few runs), and the median of the rounds per kernel: a burst of load from
// another process then spoils one round of every kernel alike, instead of all the runs of
// whichever kernel it hit. Three rounds (two in quick mode).
std::vector<Int8GemmSpeed> measure_speeds(const Context& ctx, int threads, nlohmann::json& data) {
    std::vector<Int8GemmSpeed> speeds;
    const int rounds = ctx.quick ? 2 : 3, reps = ctx.quick ? 2 : 3;
    const double min_s = ctx.quick ? 0.0 : 0.3;
    const kernels::Int8GemmKernel& ours = kernels::best_int8_gemm();
    // oneDNN's two INT8 paths: its GEMM function (dnnl_gemm_u8s8s32) and its matmul
    // primitive (brgemm kernels); Q-1 judges ours against the faster of the two.
    std::vector<const kernels::Int8GemmKernel*> onednn;
    for (const auto& k : kernels::int8_gemm_kernels())
        if (k.peer && k.available()) onednn.push_back(&k);
    std::vector<std::string> fp32_names;
    for (const auto& k : kernels::gemm_kernels())
        if (large_fp32_gemm_contender(k.name)) fp32_names.push_back(k.name);
    for (long n : {1024L, 2048L}) {
        std::map<std::string, std::vector<double>> runs;  // kernel -> rate per round
        for (int round = 0; round < rounds; ++round) {
            runs["int8"].push_back(measure_int8_gops(ours, n, threads, reps, min_s));
            runs["int8_prepacked"].push_back(measure_int8_gops(ours, n, threads, reps, min_s, true));
            for (const auto* peer : onednn) runs[peer->name].push_back(measure_int8_gops(*peer, n, threads, reps, min_s));
            for (const auto& name : fp32_names) runs["fp32_" + name].push_back(measure_gemm_gflops(name, n, threads, min_s));
        }
        Int8GemmSpeed s;
        s.n = n;
        s.int8_gops = median(runs["int8"]);
        s.int8_prepacked_gops = median(runs["int8_prepacked"]);
        nlohmann::json peers;
        for (const auto* peer : onednn) {
            peers[peer->name] = median(runs[peer->name]);
            s.onednn_int8_gops = std::max(s.onednn_int8_gops, peers[peer->name].get<double>());
        }
        nlohmann::json fp32;
        for (const auto& name : fp32_names) {
            fp32[name] = median(runs["fp32_" + name]);
            s.fp32_best_gflops = std::max(s.fp32_best_gflops, fp32[name].get<double>());
        }
        data["gemm"].push_back({{"n", n}, {"threads", threads}, {"rounds", rounds}, {"int8_kernel", ours.name},
                                {"int8_gops", s.int8_gops}, {"int8_prepacked_gops", s.int8_prepacked_gops},
                                {"onednn_int8_gops", s.onednn_int8_gops}, {"onednn_int8_paths", peers}, {"fp32_gflops", fp32},
                                {"runs", runs}});
        if (ctx.log) *ctx.log << "   N = " << n << ": INT8 " << fixed(s.int8_gops, 0) << " GOP/s (weights packed once "
                              << fixed(s.int8_prepacked_gops, 0) << "), oneDNN INT8 (faster path) " << fixed(s.onednn_int8_gops, 0)
                              << ", best FP32 " << fixed(s.fp32_best_gflops, 0) << "\n";
        speeds.push_back(s);
    }
    return speeds;
}

// Seconds for one batch of @p batch test images through the FP32 model and the INT8 one.
template <class Quantized>
std::pair<double, double> inference_seconds(nn::Sequential& net, const Quantized& q, const Dataset& test, std::size_t batch) {
    std::vector<std::size_t> idx(batch);
    for (std::size_t i = 0; i < batch; ++i) idx[i] = i;
    const Tensor x = test.get_batch(idx).inputs;
    const NoGradGuard no_grad;
    const double fp32 = testkit::best_seconds([&] { net.forward(x); }, 5, 0.1);
    const double int8 = testkit::best_seconds([&] { q.forward(x); }, 5, 0.1);
    return {fp32, int8};
}

// The sizes on disk of @p net saved in FP32 and of @p q, its per-channel INT8 model.
template <class Quantized>
std::pair<double, double> file_sizes(const nn::Module& net, const Quantized& q) {
    const auto folder = std::filesystem::temp_directory_path() / ("gradlab_q1_" + std::to_string(::getpid()));
    std::filesystem::create_directories(folder);
    quant::save_float_model(net, (folder / "fp32.glm").string());
    quant::save_quantized_model(q, (folder / "int8.glm").string());
    const double fp32 = static_cast<double>(std::filesystem::file_size(folder / "fp32.glm"));
    const double int8 = static_cast<double>(std::filesystem::file_size(folder / "int8.glm"));
    std::filesystem::remove_all(folder);
    return {fp32, int8};
}

// How one model is quantized: PTQ with options -> something with accuracy(), forward()
// and a model file; QAT-converted likewise.
struct Q1Recipe {
    std::string name;                                  // "MLP", "CNN"
    std::shared_ptr<nn::Sequential> net;               // the float model, trained
    std::shared_ptr<const Dataset> calibration;        // PTQ's examples (the first of it)
    std::size_t calibration_examples = 1000;           // how many
    std::shared_ptr<const Dataset> qat_data;           // QAT's fine-tuning set
    const Dataset* test = nullptr;                     // where accuracy is measured
    training::FitOptions fit;                          // the float training's options
    std::size_t latency_batch = 1000;                  // images per timed inference batch
};

// PTQ with every observer, per tensor and per channel; QAT; files; latency; all in
// @p out and @p json.
template <class Quantize, class Convert>
Q1Model measure_model(const Q1Recipe& r, Quantize quantize, Convert convert, nlohmann::json& json, std::ostream* log,
                      std::string& summary) {
    Q1Model m;
    m.name = r.name;
    m.fp32_accuracy = training::evaluate(*r.net, *r.test).accuracy;
    if (log) *log << "   " << r.name << " FP32 test accuracy " << fixed(m.fp32_accuracy, 4) << "\n";
    std::ostringstream acc;
    for (const char* observer : {"minmax", "moving_average", "percentile", "mse"})
        for (bool per_channel : {false, true}) {
            quant::PtqOptions o;
            o.observer = observer;
            o.per_channel = per_channel;
            o.calibration = r.calibration_examples;
            const double a = quantize(*r.net, *r.calibration, o).accuracy(*r.test);
            const std::string name = std::string("PTQ ") + observer + (per_channel ? " per-channel" : " per-tensor");
            m.variants.push_back({name, a, per_channel, false});
            acc << name << " " << fixed(a, 4) << ", ";
        }
    quant::PtqOptions best;
    best.calibration = r.calibration_examples;
    const auto q = quantize(*r.net, *r.calibration, best);  // minmax per channel: the model file and the timing
    std::tie(m.float_file_bytes, m.int8_file_bytes) = file_sizes(*r.net, q);
    const auto [fp32_s, int8_s] = inference_seconds(*r.net, q, *r.test, r.latency_batch);
    // QAT: one epoch of fake-quantized fine-tuning from the FP32 model, at a tenth of its
    // learning rate. It trains the float model's own parameters, so it runs last.
    auto qat = quant::prepare_qat(*r.net, true);
    training::FitOptions qfit = r.fit;
    qfit.epochs = 1;
    qfit.lr = r.fit.lr / 10.0;
    training::fit(*qat, r.qat_data, nullptr, qfit);
    const double qat_acc = convert(*qat).accuracy(*r.test);
    m.variants.push_back({"QAT per-channel", qat_acc, true, true});
    acc << "QAT per-channel " << fixed(qat_acc, 4);
    nlohmann::json& j = json["models"][r.name];
    for (const auto& v : m.variants) j["accuracy"][v.name] = v.accuracy;
    j["fp32_accuracy"] = m.fp32_accuracy;
    j["test_images"] = r.test->size();
    j["file_bytes"] = {{"fp32", m.float_file_bytes}, {"int8_per_channel", m.int8_file_bytes}};
    j["inference_seconds"] = {{"batch", r.latency_batch}, {"fp32", fp32_s}, {"int8", int8_s}};
    std::ostringstream out;
    out << r.name << " (" << r.net->describe() << ", " << r.fit.epochs << " FP32 epoch(s), " << r.test->size()
        << " test images): FP32 " << fixed(m.fp32_accuracy, 4) << "; " << acc.str() << ". Files: FP32 "
        << fixed(m.float_file_bytes, 0) << " bytes, INT8 (per channel) " << fixed(m.int8_file_bytes, 0) << " ("
        << fixed(m.float_file_bytes / m.int8_file_bytes, 2) << "x smaller). Inference of " << r.latency_batch
        << " images: FP32 " << fixed(fp32_s * 1e3, 2) << " ms, INT8 " << fixed(int8_s * 1e3, 2) << " ms. ";
    summary += out.str();
    return m;
}

Result q1(const Context& ctx) {
    Result r;
    const std::string dir = ctx.data_dir.empty() ? default_fashion_mnist_dir().string() : ctx.data_dir;
    auto train = std::make_shared<MnistDataset>(dir, MnistSplit::Train);
    const auto test = std::make_shared<MnistDataset>(dir, MnistSplit::Test);
    Q1Measured m;
    std::string summary;
    {  // The MLP: SimpleNet on the whole training set.
        Q1Recipe mlp;
        mlp.name = "MLP";
        Rng rng(ctx.seed);
        mlp.net = nn::make_simple_net(rng, train->example_shape().back(), 128, train->num_classes());
        mlp.fit.epochs = ctx.quick ? 1 : 3;
        mlp.fit.seed = ctx.seed;
        training::fit(*mlp.net, train, nullptr, mlp.fit);
        mlp.calibration = train;
        mlp.qat_data = ctx.quick ? std::static_pointer_cast<const Dataset>(SubsetDataset::first(train, train->size() / 4)) : train;
        mlp.test = test.get();
        m.models.push_back(measure_model(
            mlp, [](nn::Sequential& n, const Dataset& d, const quant::PtqOptions& o) { return quant::quantize_mlp(n, d, o); },
            [](const nn::Sequential& q) { return quant::convert_qat(q); }, r.data, ctx.log, summary));
    }
    {  // The CNN of `train --model cnn`, on part of the training set.
        Q1Recipe cnn;
        cnn.name = "CNN";
        Rng rng(ctx.seed);
        const auto side = static_cast<std::int64_t>(std::lround(std::sqrt(static_cast<double>(train->example_shape().back()))));
        cnn.net = nn::make_cnn(rng, side, 32, 64, 128, train->num_classes());
        const auto part = SubsetDataset::first(train, std::min<std::size_t>(ctx.quick ? 2000 : 20000, train->size()));
        cnn.fit.epochs = ctx.quick ? 1 : 2;
        cnn.fit.seed = ctx.seed;
        training::fit(*cnn.net, part, nullptr, cnn.fit);
        cnn.calibration = part;
        cnn.calibration_examples = ctx.quick ? 250 : 1000;
        cnn.qat_data = SubsetDataset::first(train, std::min<std::size_t>(ctx.quick ? 1000 : 10000, train->size()));
        const auto test_part = SubsetDataset::first(test, std::min<std::size_t>(ctx.quick ? 1000 : 10000, test->size()));
        cnn.test = test_part.get();
        cnn.latency_batch = 256;
        m.models.push_back(measure_model(
            cnn, [](nn::Sequential& n, const Dataset& d, const quant::PtqOptions& o) { return quant::quantize_cnn(n, d, o); },
            [](const nn::Sequential& q) { return quant::convert_qat_cnn(q); }, r.data, ctx.log, summary));
    }
    const int threads = machine_cores();
    m.speeds = measure_speeds(ctx, threads, r.data);
    std::ostringstream out;
    out << summary << "GEMM on " << threads << " threads, INT8 kernel " << kernels::best_int8_gemm().name << ": ";
    for (const auto& s : m.speeds)
        out << "N = " << s.n << " INT8 " << fixed(s.int8_gops, 0) << " GOP/s vs best FP32 " << fixed(s.fp32_best_gflops, 0)
            << " GFLOP/s (" << fixed(s.int8_gops / s.fp32_best_gflops, 2) << "x; weights packed once "
            << fixed(s.int8_prepacked_gops, 0) << " GOP/s, " << fixed(s.int8_prepacked_gops / s.fp32_best_gflops, 2)
            << "x), oneDNN INT8 (the faster of its GEMM and matmul) "
            << fixed(s.onednn_int8_gops, 0) << " (ours " << fixed(s.onednn_int8_gops > 0 ? s.int8_gops / s.onednn_int8_gops : 0, 2)
            << "x); ";
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
