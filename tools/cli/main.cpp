// The gradlab command: `info`, `train`, `claims`. The ./gradlab wrapper at the top of the
// repository builds this program and forwards these subcommands to it.
#include <CLI/CLI.hpp>
#include <fmt/core.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iostream>

#include "../../bench/claims/claims.hpp"
#include "base/error.hpp"
#include "data/mnist.hpp"
#include "kernels/gemm.hpp"
#include "nn/module.hpp"
#include "parallel/thread_pool.hpp"
#include "sys/cpu_info.hpp"
#include "sys/cuda_info.hpp"
#include "training/trainer.hpp"

namespace {

std::string join(const std::vector<std::string>& items, const std::string& sep) {
    std::string s;
    for (const auto& i : items) s += (s.empty() ? "" : sep) + i;
    return s;
}

std::string machine_summary() {
    const auto& cpu = gl::sys::cpu_info();
    return fmt::format("{} ({} CPUs; {})", cpu.model, cpu.logical_cpus, join(gl::sys::feature_names(cpu.features), " "));
}

int cmd_info() {
    const auto& cpu = gl::sys::cpu_info();
    fmt::print("CPU:       {} ({})\n", cpu.model, cpu.vendor);
    fmt::print("cores:     {} usable by this process\n", cpu.logical_cpus);
    fmt::print("features:  {}\n", join(gl::sys::feature_names(cpu.features), " "));
    fmt::print("missing:   {}\n", join(gl::sys::missing_feature_names(cpu.features), " "));
    for (const auto& c : cpu.caches)
        fmt::print("cache:     L{} {:<11} {:>6} KiB, shared by {} CPU(s)\n", c.level, c.type, c.size_bytes / 1024,
                   c.shared_by_cpus);
    const auto cuda = gl::sys::cuda_report();
    if (!cuda.built_with_cuda) {
        fmt::print("CUDA:      none: {}\n", cuda.reason);
    } else {
        fmt::print("CUDA:      built with runtime {}.{}; driver supports {}\n", cuda.runtime_version / 1000,
                   cuda.runtime_version % 1000 / 10,
                   cuda.driver_version ? fmt::format("{}.{}", cuda.driver_version / 1000, cuda.driver_version % 1000 / 10)
                                       : std::string("nothing (no driver)"));
        if (cuda.devices.empty()) fmt::print("devices:   none: {}\n", cuda.reason);
        for (const auto& d : cuda.devices)
            fmt::print("device {}:  {} (sm_{}{}, {} SMs, {:.1f} GiB){}\n", d.index, d.name, d.major, d.minor,
                       d.multiprocessors, static_cast<double>(d.memory_bytes) / (1 << 30),
                       d.smoke_kernel_ran ? "" : " - a test kernel did NOT run");
    }
    fmt::print("threads:   {} (gl::set_num_threads, train --threads)\n", gl::get_num_threads());
    fmt::print("GEMM:      ");
    for (const auto& k : gl::kernels::gemm_kernels()) fmt::print("{} ", k.name);
    fmt::print("(default {})\n", gl::kernels::default_gemm().name);
    for (const auto& k : gl::kernels::gemm_kernels())
        if (const std::string why = gl::kernels::why_unavailable(k); !why.empty())
            fmt::print("           {} cannot run here: {}\n", k.name, why);
    return 0;
}

struct TrainArgs {
    int epochs = 5;
    std::size_t batch_size = 64;
    double lr = 1e-3;
    std::string optimizer = "adam";
    std::uint64_t seed = 0;
    std::string data;
    std::string gemm;
    std::size_t limit = 0;
    int threads = 0;
};

// A one-line progress bar, redrawn in place on a terminal, printed once otherwise.
class ProgressBar {
public:
    explicit ProgressBar(int epoch, int epochs) : epoch_(epoch), epochs_(epochs), tty_(isatty(STDERR_FILENO)) {}
    void update(std::size_t done, std::size_t total, double loss) {
        if (!tty_ || (done % 20 != 0 && done != total)) return;
        const int width = 30;
        const int filled = static_cast<int>(width * done / total);
        fmt::print(stderr, "\repoch {}/{} [{}{}] {}/{} loss {:.4f}", epoch_, epochs_, std::string(filled, '#'),
                   std::string(width - filled, '.'), done, total, loss);
        if (done == total) fmt::print(stderr, "\r{}\r", std::string(80, ' '));
    }

private:
    int epoch_, epochs_;
    bool tty_;
};

int cmd_train(const TrainArgs& a) {
    if (!a.gemm.empty()) gl::kernels::set_default_gemm(a.gemm);
    if (a.threads > 0) gl::set_num_threads(a.threads);
    const std::string dir = a.data.empty() ? gl::default_fashion_mnist_dir().string() : a.data;
    std::shared_ptr<const gl::Dataset> train = std::make_shared<gl::MnistDataset>(dir, gl::MnistSplit::Train);
    if (a.limit > 0 && a.limit < train->size()) train = gl::SubsetDataset::first(train, a.limit);
    const gl::MnistDataset test(dir, gl::MnistSplit::Test);
    gl::Rng rng(a.seed);
    auto net = gl::nn::make_simple_net(rng, train->example_shape().back());
    fmt::print("model:  {} ({} parameters)\n", net->describe(), net->parameter_count());
    fmt::print("data:   {} ({} training, {} test examples)\n", dir, train->size(), test.size());
    fmt::print("setup:  {} lr {} batch {} seed {} gemm {} threads {}\n", a.optimizer, a.lr, a.batch_size, a.seed,
               gl::kernels::default_gemm().name, gl::get_num_threads());
    gl::training::FitOptions opt;
    opt.epochs = a.epochs;
    opt.batch_size = a.batch_size;
    opt.lr = a.lr;
    opt.optimizer = a.optimizer;
    opt.seed = a.seed;
    int epoch = 1;
    ProgressBar bar(1, a.epochs);
    gl::training::fit(
        *net, train, &test, opt,
        [&](const gl::training::EpochReport& e) {
            fmt::print("epoch {}/{}  train loss {:.4f} acc {:.4f}  test loss {:.4f} acc {:.4f}  {:.2f} s  {:.0f} samples/s\n",
                       e.epoch, a.epochs, e.train_loss, e.train_accuracy, e.test.loss, e.test.accuracy, e.seconds,
                       e.samples_per_second);
            std::fflush(stdout);
            bar = ProgressBar(++epoch, a.epochs);
        },
        [&](std::size_t done, std::size_t total, double loss) { bar.update(done, total, loss); });
    return 0;
}

int cmd_claims(bool quick, const std::string& out_dir, const std::vector<std::string>& only, const std::string& data,
               std::uint64_t seed) {
    gl::claims::Context ctx;
    ctx.quick = quick;
    ctx.data_dir = data;
    ctx.seed = seed;
    ctx.log = &std::cerr;
    const std::string machine = machine_summary();
    fmt::print("gradlab claims report{}\nmachine: {}\n", quick ? " (quick)" : "", machine);
    std::fflush(stdout);
    const auto results = gl::claims::run_claims(ctx, only);
    gl::claims::print_table(results, std::cout);
    std::filesystem::create_directories(out_dir);
    // Write to temporary names and rename, so an interrupted run leaves no half-written report.
    const auto md_path = std::filesystem::path(out_dir) / "claims.md";
    const auto json_path = std::filesystem::path(out_dir) / "claims.json";
    {
        std::ofstream(md_path.string() + ".tmp") << gl::claims::to_markdown(results, machine);
        std::ofstream(json_path.string() + ".tmp") << gl::claims::to_json(results, machine).dump(2) << "\n";
    }
    std::filesystem::rename(md_path.string() + ".tmp", md_path);
    std::filesystem::rename(json_path.string() + ".tmp", json_path);
    fmt::print("written: {} and {}\n", md_path.string(), json_path.string());
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"gradlab: deep-learning hardware and software, reproduced"};
    app.require_subcommand(1);

    app.add_subcommand("info", "CPU model and features, cores, caches, CUDA devices");

    TrainArgs t;
    auto* train = app.add_subcommand("train", "train SimpleNet (784-128-10) on an MNIST-format dataset");
    train->add_option("--epochs", t.epochs, "passes over the training set")->check(CLI::Range(1, 1000));
    train->add_option("--batch-size", t.batch_size, "examples per step")->check(CLI::Range(1, 1 << 20));
    train->add_option("--lr", t.lr, "learning rate")->check(CLI::PositiveNumber);
    train->add_option("--optimizer", t.optimizer, "sgd (momentum 0.9) or adam")->check(CLI::IsMember({"sgd", "adam"}));
    train->add_option("--seed", t.seed, "seed for initialisation and shuffling");
    train->add_option("--data", t.data, "MNIST-format folder (default: Debian's Fashion-MNIST)");
    train->add_option("--gemm", t.gemm, "GEMM kernel to use (see `gradlab info`)");
    train->add_option("--limit", t.limit, "use only the first N training examples");
    train->add_option("--threads", t.threads, "intra-op threads (default: the CPUs this process may use)")
        ->check(CLI::Range(1, 256));

    bool quick = false;
    std::string out_dir = "results";
    std::vector<std::string> only;
    std::string claims_data;
    std::uint64_t claims_seed = 0;
    auto* claims = app.add_subcommand("claims", "run the experiments behind the lecture's claims and print verdicts");
    claims->add_flag("--quick", quick, "keep the whole report within a few minutes");
    claims->add_option("--out", out_dir, "folder for claims.md and claims.json");
    claims->add_option("--only", only, "claim IDs to run (e.g. FW-1 FW-2)");
    claims->add_option("--data", claims_data, "MNIST-format folder (default: Debian's Fashion-MNIST)");
    claims->add_option("--seed", claims_seed, "seed for every experiment");

    CLI11_PARSE(app, argc, argv);
    try {
        if (app.got_subcommand("info")) return cmd_info();
        if (app.got_subcommand("train")) return cmd_train(t);
        if (app.got_subcommand("claims")) return cmd_claims(quick, out_dir, only, claims_data, claims_seed);
    } catch (const std::exception& e) {
        fmt::print(stderr, "gradlab: error: {}\n", e.what());
        return 1;
    }
    return 0;
}
