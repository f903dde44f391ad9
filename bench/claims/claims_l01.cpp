// Lab 01 claims: FW-1 (autograd and modules) and FW-2 (the training loop learns).
#include <algorithm>
#include <iomanip>
#include <sstream>

#include "autograd/gradcheck.hpp"
#include "autograd/op_cases.hpp"
#include "claims.hpp"
#include "verdicts.hpp"
#include "data/mnist.hpp"
#include "training/toy_models.hpp"
#include "training/trainer.hpp"

namespace gl::claims {
namespace {

Result fw1(const Context&) {
    Result r;
    int passed = 0;
    double worst = 0.0;
    std::string failed;
    const auto cases = standard_op_cases();
    for (const auto& c : cases) {
        const GradcheckResult g = gradcheck(c.fn, make_op_case_inputs(c));
        passed += g.ok;
        worst = std::max(worst, g.max_abs_error);
        if (!g.ok) failed += (failed.empty() ? "" : ", ") + c.name;
        r.data["gradcheck"][c.name] = {{"ok", g.ok}, {"max_abs_error", g.max_abs_error}};
    }
    const training::ToyTrainResult toy = training::train_data_dependent_net(7);
    r.data["data_dependent_net"] = {{"first_loss", toy.first_loss}, {"last_loss", toy.last_loss},
                                    {"accuracy", toy.accuracy}, {"min_depth", toy.min_depth},
                                    {"max_depth", toy.max_depth}};
    std::ostringstream m;
    m << passed << "/" << cases.size() << " op gradient checks pass (float64 central differences, worst |error| "
      << std::scientific << std::setprecision(1) << worst << "); a net whose depth follows the data ("
      << toy.min_depth << ".." << toy.max_depth << " steps) trained from loss " << fixed(toy.first_loss, 3)
      << " to " << fixed(toy.last_loss, 3) << ", accuracy " << fixed(toy.accuracy, 3);
    r.measured = m.str();
    const Judgement j = judge_fw1(passed, static_cast<int>(cases.size()), toy.first_loss, toy.last_loss,
                                  toy.min_depth != toy.max_depth);
    r.verdict = j.verdict;
    r.why = j.why + (failed.empty() ? "" : " (" + failed + ")");
    return r;
}

Result fw2(const Context& ctx) {
    Result r;
    const std::string dir = ctx.data_dir.empty() ? default_fashion_mnist_dir().string() : ctx.data_dir;
    auto train = std::make_shared<MnistDataset>(dir, MnistSplit::Train);
    const MnistDataset test(dir, MnistSplit::Test);
    Rng rng(ctx.seed);
    auto net = nn::make_simple_net(rng);
    training::FitOptions opt;  // the lecture's setting: Adam, batch 64, 5 epochs
    opt.seed = ctx.seed;
    std::ostringstream per_epoch;
    double best = 0.0;
    int best_epoch = 0;
    double seconds = 0.0;
    training::fit(*net, train, &test, opt, [&](const training::EpochReport& e) {
        per_epoch << (e.epoch > 1 ? ", " : "") << fixed(e.test.accuracy, 4);
        if (e.test.accuracy > best) {
            best = e.test.accuracy;
            best_epoch = e.epoch;
        }
        seconds += e.seconds;
        r.data["epochs"].push_back({{"epoch", e.epoch}, {"train_loss", e.train_loss}, {"test_accuracy", e.test.accuracy},
                                    {"seconds", e.seconds}, {"samples_per_second", e.samples_per_second}});
        if (ctx.log) *ctx.log << "   epoch " << e.epoch << ": test accuracy " << fixed(e.test.accuracy, 4) << "\n";
    });
    const double final_acc = r.data["epochs"].back()["test_accuracy"];
    r.measured = "SimpleNet 784-128-10 on Fashion-MNIST (Adam, batch 64): test accuracy per epoch " +
                 per_epoch.str() + "; " + fixed(seconds / opt.epochs, 2) + " s per epoch";
    const Judgement j = judge_fw2(final_acc, opt.epochs);
    r.verdict = j.verdict;
    r.why = j.why + " (best " + fixed(best, 4) + " at epoch " +
            std::to_string(best_epoch) + ")";
    return r;
}

}  // namespace

std::vector<Claim> lab01_claims() {
    return {
        {"FW-1", "01",
         "frameworks give tensor ops, define-by-run automatic differentiation and module abstractions",
         fw1},
        {"FW-2", "01",
         "the four-step loop (forward, loss, backward, update) trains SimpleNet 784-128-10 on Fashion-MNIST "
         "to >= 0.87 test accuracy within 5 epochs",
         fw2},
    };
}

}  // namespace gl::claims
