// Lab 11 claims: CONV-1 (the convolution algorithms agree, Winograd multiplies less,
// which is fastest depends on the shape and the autotuner finds it) and CONV-2 (a small
// CNN beats the MLP). Errors and multiplies are exact; times are the best of repeated
// runs in the same process, and the autotuner's pick is compared with them.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <sstream>

#include "claims.hpp"
#include "data/mnist.hpp"
#include "kernels/cpu/conv/autotune.hpp"
#include "kernels/cpu/conv/conv.hpp"
#include "nn/conv_layers.hpp"
#include "parallel/thread_pool.hpp"
#include "training/trainer.hpp"
#include "testkit/conv_problems.hpp"
#include "verdicts_l11.hpp"

namespace gl::claims {
namespace {

namespace kc = kernels::conv;

// A square problem: N C H x H -> K R x R.
kc::ConvGeometry geom(std::int64_t N, std::int64_t C, std::int64_t H, std::int64_t K, std::int64_t R, std::int64_t stride,
                      std::int64_t pad, std::int64_t groups = 1, std::int64_t dil = 1) {
    return testkit::conv_geometry(N, C, H, H, K, R, R, stride, pad, dil, groups);
}

// The three passes of @p algo on the same inputs (seeded), in T.
template <class T>
std::vector<std::vector<T>> passes(kc::ConvAlgo algo, const kc::ConvGeometry& g) {
    const auto x = testkit::random_values<T>(g.input_size(), 1), w = testkit::random_values<T>(g.weight_size(), 2), dy = testkit::random_values<T>(g.output_size(), 3);
    std::vector<std::vector<T>> out{std::vector<T>(dy.size()), std::vector<T>(x.size()), std::vector<T>(w.size())};
    kc::forward(algo, g, x.data(), w.data(), out[0].data());
    kc::backward_data(algo, g, dy.data(), w.data(), out[1].data());
    kc::backward_weight(algo, g, x.data(), dy.data(), out[2].data());
    return out;
}

// Worst float32 error of any algorithm and pass against float64 direct on the grid.
double worst_error_on_grid(std::ostringstream& m) {
    const std::vector<kc::ConvGeometry> grid = {geom(2, 3, 9, 4, 3, 1, 1), geom(1, 4, 11, 6, 3, 1, 2, 2),
                                                geom(2, 6, 7, 6, 3, 1, 1, 6), geom(2, 3, 13, 5, 3, 2, 1),
                                                geom(1, 2, 10, 3, 3, 1, 2, 1, 2), geom(2, 3, 9, 4, 5, 1, 2)};
    double worst = 0;
    std::string worst_where;
    for (const auto& g : grid) {
        const auto oracle = passes<double>(kc::ConvAlgo::Direct, g);
        for (const auto& a : kc::conv_algorithms()) {
            if (!kc::why_unsupported(a.algo, g).empty()) continue;
            const auto f = passes<float>(a.algo, g);
            for (int p = 0; p < 3; ++p)
                if (const double e = testkit::max_relative_error(f[p], oracle[p]); e > worst) worst = e, worst_where = a.name + " on " + g.str();
        }
    }
    m << "on " << grid.size() << " shapes (odd sizes, strides, padding, dilation, groups, depthwise, 5x5) every "
      << "algorithm's forward, data and weight gradients in float32 are within " << testkit::scientific(worst, 1)
      << " of float64 direct (worst: " << worst_where << "). ";
    return worst;
}

// The multiplies of @p algo's forward pass alone (the claim is about the forward; the
// backward passes have their own counts, tested in tests/unit/test_conv.cpp).
std::int64_t forward_multiplies(kc::ConvAlgo algo, const kc::ConvGeometry& g) {
    const auto x = testkit::random_values<float>(g.input_size(), 1), w = testkit::random_values<float>(g.weight_size(), 2);
    std::vector<float> y(g.output_size());
    kc::reset_multiplies();
    kc::forward(algo, g, x.data(), w.data(), y.data());
    return kc::multiplies();
}

// The layers of the CNN and the small ResNet of train --model, at @p batch.
std::vector<kc::ConvGeometry> model_layers(std::int64_t batch) {
    return {geom(batch, 1, 28, 32, 3, 1, 1),  geom(batch, 32, 14, 64, 3, 1, 1),   // CNN
            geom(batch, 16, 28, 16, 3, 1, 1), geom(batch, 16, 28, 32, 3, 2, 1),   // ResNet: block 1, block 2 in
            geom(batch, 32, 14, 32, 3, 1, 1), geom(batch, 32, 14, 64, 3, 2, 1),   //   block 2, block 3 in
            geom(batch, 64, 7, 64, 3, 1, 1),  geom(batch, 16, 28, 32, 1, 2, 0)};  //   block 3, 1x1 shortcut
}

Result conv1(const Context& ctx) {
    Result r;
    std::ostringstream m;
    Conv1Measured cm;
    cm.worst_float32_error = worst_error_on_grid(m);
    const kc::ConvGeometry whole_tiles = geom(2, 8, 18, 16, 3, 1, 0);  // 16x16 outputs
    const double direct = static_cast<double>(forward_multiplies(kc::ConvAlgo::Direct, whole_tiles));
    cm.winograd_f2_ratio = direct / static_cast<double>(forward_multiplies(kc::ConvAlgo::WinogradF2, whole_tiles));
    cm.winograd_f4_ratio = direct / static_cast<double>(forward_multiplies(kc::ConvAlgo::WinogradF4, whole_tiles));
    r.data["worst_float32_relative_error"] = cm.worst_float32_error;
    r.data["multiplies_direct_over_f2"] = cm.winograd_f2_ratio;
    r.data["multiplies_direct_over_f4"] = cm.winograd_f4_ratio;
    m << "Counted forward multiplies on " << whole_tiles.str() << ": direct/F(2x2,3x3) = " << fixed(cm.winograd_f2_ratio, 4)
      << ", direct/F(4x4,3x3) = " << fixed(cm.winograd_f4_ratio, 4) << ". Forward time per algorithm (ms, "
      << get_num_threads() << " threads; * = fastest, > = autotuner's pick): ";
    const std::int64_t batch = ctx.quick ? 8 : 32;
    kc::set_conv_algorithm("auto");
    for (const auto& g : model_layers(batch)) {
        const kc::TuneRecord timed = kc::measure(kc::ConvPass::Forward, g, false, ctx.quick ? 2 : 4);
        kc::clear_tune_cache();
        const kc::ConvAlgo pick = kc::choose(kc::ConvPass::Forward, g, false);
        ConvShapeTiming t{g.str(), timed.seconds, kc::conv_algorithm(pick).name};
        const auto best = std::min_element(t.seconds.begin(), t.seconds.end(),
                                           [](const auto& a, const auto& b) { return a.second < b.second; });
        m << g.str() << ":";
        for (const auto& [name, s] : t.seconds) {
            m << " " << (name == best->first ? "*" : "") << (name == t.autotuner_pick ? ">" : "") << name << " "
              << fixed(s * 1e3, 2);
            r.data["timings"][g.str()][name] = s;
        }
        r.data["timings"][g.str()]["autotuner_pick"] = t.autotuner_pick;
        m << "; ";
        cm.timings.push_back(t);
    }
    kc::clear_tune_cache();
    r.measured = m.str();
    const Judgement j = judge_conv1(cm);
    r.verdict = j.verdict;
    r.why = j.why;
    return r;
}

// Test accuracy of @p net after @p epochs on @p train.
double train_and_test(nn::Module& net, const std::shared_ptr<const Dataset>& train, const Dataset& test, int epochs,
                      std::uint64_t seed, double& seconds) {
    training::FitOptions opt;
    opt.epochs = epochs;
    opt.seed = seed;
    double accuracy = 0;
    seconds = 0;
    training::fit(net, train, &test, opt, [&](const training::EpochReport& e) {
        accuracy = e.test.accuracy;
        seconds += e.seconds;
    });
    return accuracy;
}

Result conv2(const Context& ctx) {
    Result r;
    const std::string dir = ctx.data_dir.empty() ? default_fashion_mnist_dir().string() : ctx.data_dir;
    const auto full = std::make_shared<MnistDataset>(dir, MnistSplit::Train);
    const std::size_t examples = ctx.quick ? 6000 : 30000;
    const int epochs = ctx.quick ? 2 : 3;
    const auto train = SubsetDataset::first(full, std::min(examples, full->size()));
    const MnistDataset test(dir, MnistSplit::Test);
    Rng rng_mlp(ctx.seed), rng_cnn(ctx.seed);
    auto mlp = nn::make_simple_net(rng_mlp);
    auto cnn = nn::make_cnn(rng_cnn);
    double mlp_seconds = 0, cnn_seconds = 0;
    const double mlp_acc = train_and_test(*mlp, train, test, epochs, ctx.seed, mlp_seconds);
    const double cnn_acc = train_and_test(*cnn, train, test, epochs, ctx.seed, cnn_seconds);
    r.data = {{"examples", train->size()}, {"epochs", epochs}, {"mlp_accuracy", mlp_acc}, {"cnn_accuracy", cnn_acc},
              {"mlp_seconds", mlp_seconds}, {"cnn_seconds", cnn_seconds}};
    r.measured = "the first " + std::to_string(train->size()) + " Fashion-MNIST training images, " +
                 std::to_string(epochs) + " epochs (Adam, batch 64), all 10000 test images: MLP " + mlp->describe() +
                 " " + fixed(mlp_acc, 4) + " in " + fixed(mlp_seconds, 1) + " s, CNN (2 conv + pool + FC) " +
                 fixed(cnn_acc, 4) + " in " + fixed(cnn_seconds, 1) + " s. (The full run, `gradlab train --model cnn "
                 "--epochs 10`, is the one that reaches ~0.91.)";
    const Judgement j = judge_conv2(cnn_acc, mlp_acc, epochs);
    r.verdict = j.verdict;
    r.why = j.why;
    return r;
}

}  // namespace

std::vector<Claim> lab11_claims() {
    return {
        {"CONV-1", "11",
         "direct, im2col + GEMM, Winograd (2.25x fewer multiplies) and FFT convolutions agree; the fastest depends on "
         "the shape, so an autotuner measures and picks",
         conv1, true},
        {"CONV-2", "11", "a small CNN beats the MLP (Fashion-MNIST ~0.91 for two conv layers)", conv2},
    };
}

}  // namespace gl::claims
