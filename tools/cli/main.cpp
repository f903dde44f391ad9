// The gradlab command: `info`, `train`, `claims`. The ./gradlab wrapper at the top of the
// repository builds this program and forwards these subcommands to it.
#include <CLI/CLI.hpp>
#include <fmt/core.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "../../bench/claims/claims.hpp"
#include "build_info.hpp"
#include "profile_cmd.hpp"
#include "onnx_cmd.hpp"
#include "quantize_cmd.hpp"
#include "quant/model_file.hpp"
#include "base/error.hpp"
#include "data/image_folder.hpp"
#include "data/mnist.hpp"
#include "dist/mpi_comm.hpp"
#include "dist/nccl_comm.hpp"
#include "device/device.hpp"
#include "dist/parallel_training.hpp"
#include "dist/pipeline.hpp"
#include "nn/deep_mlp.hpp"
#include "dist/thread_comm.hpp"
#include "kernels/gemm.hpp"
#include "kernels/cpu/conv/autotune.hpp"
#include "nn/conv_layers.hpp"
#include "nn/deep_mlp.hpp"
#include "memory/caching_allocator.hpp"
#include "memory/tracking_allocator.hpp"
#include "kernels/gemm_lowp.hpp"
#include "nn/module.hpp"
#include "parallel/thread_pool.hpp"
#include "sys/cpu_info.hpp"
#include "sys/cuda_info.hpp"
#include "training/memory_profile.hpp"
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
    std::string profile;  // --profile DIR: profile the steps, write table, trace and diagnosis there
    int epochs = 5;
    std::size_t batch_size = 64;
    double lr = 1e-3;
    std::string optimizer = "adam";
    std::uint64_t seed = 0;
    std::string data;
    std::string gemm;
    std::int64_t limit = 0;  // 0: all of the training set
    int threads = 0;
    bool memory = false;             // print the memory table
    // "caching" (reuse freed blocks) or "direct" (malloc per tensor); empty: not given,
    // which means caching. Caching by default: with malloc, each step's large activations
    // are fresh mappings whose pages fault and are zeroed again every step (CKPT-3), 10% of
    // a CNN step on a 2-core machine.
    std::string allocator;
    std::string allocator_or_default() const { return allocator.empty() ? "caching" : allocator; }
    std::string precision = "fp32";
    bool no_loss_scaling = false;
    bool no_master_weights = false;
    int workers = 1;
    std::string parallel = "ddp";
    int micro_batches = 4;           // --parallel pp
    std::string schedule = "1f1b";   // --parallel pp
    std::string backend;  // empty: mpi under mpirun, threads otherwise
    std::string device = "cpu";     // cpu, cuda, cuda_cpu
    bool item_every_step = false;   // read the loss every step (a host sync on a device)
    std::string save;     // model file to write after training (INT8 with --qat)
    bool qat = false;     // fine-tune with fake quantization, then convert to INT8
    int qat_epochs = 1;
    bool per_tensor = false;  // QAT: one weight scale per tensor instead of per channel
    std::string model = "mlp";       // mlp (SimpleNet), mlp-1024, deep-mlp, cnn or resnet
    std::string conv_algo = "auto";  // the autotuner, or a fixed convolution algorithm
    bool verbose = false;            // print the autotuner's table after training
};

// The model of --model for examples of @p features values (square images for the conv nets).
std::shared_ptr<gl::nn::Module> make_model(const std::string& model, gl::Rng& rng, std::int64_t features) {
    if (model == "mlp") return gl::nn::make_simple_net(rng, features);
    if (model == "mlp-1024") return gl::nn::make_deep_mlp(rng, 2, 1024, features);  // GEMM-bound: 784-1024-1024-10
    if (model == "deep-mlp") return gl::nn::make_deep_mlp(rng, 3, 256, features);  // 784-256-256-256-10
    const auto side = static_cast<std::int64_t>(std::lround(std::sqrt(static_cast<double>(features))));
    if (side * side != features || side % 4 != 0)
        throw gl::Error(fmt::format("--model {} needs square images with a side divisible by 4, and the examples "
                                    "have {} values; use --model mlp",
                                    model, features));
    if (model == "cnn") return gl::nn::make_cnn(rng, side);
    return gl::nn::make_resnet(rng, side);
}

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

void print_epoch(const gl::training::EpochReport& e, int epochs, bool mixed_precision = false,
                 bool on_device = false) {
    fmt::print("epoch {}/{}  train loss {:.4f} acc {:.4f}  test loss {:.4f} acc {:.4f}  {:.3f} s  {:.0f} samples/s",
               e.epoch, epochs, e.train_loss, e.train_accuracy, e.test.loss, e.test.accuracy, e.seconds,
               e.samples_per_second);
    if (mixed_precision) fmt::print("  loss scale {:g}, {} steps skipped", e.loss_scale, e.skipped_steps);
    if (on_device && e.steps > 0)
        fmt::print("  host syncs/step {:g}, copies to device/step {:g}",
                   static_cast<double>(e.host_syncs_in_steps) / static_cast<double>(e.steps),
                   static_cast<double>(e.host_to_device_copies) / static_cast<double>(e.steps));
    fmt::print("\n");
    std::fflush(stdout);
}

// train --workers N --parallel dp|ddp --backend threads|mpi: every rank trains, rank 0 reports.
int cmd_train_parallel(const TrainArgs& a, const gl::training::FitOptions& fit,
                       const std::shared_ptr<const gl::Dataset>& train, const gl::Dataset& test) {
    gl::dist::ParallelFitOptions o;
    o.fit = fit;
    o.parallel = a.parallel;
    o.micro_batches = a.micro_batches;
    o.schedule = gl::dist::parse_pipe_schedule(a.schedule);
    const auto new_model = [&] {
        gl::Rng rng(a.seed);
        return make_model(a.model, rng, train->example_shape().back());
    };
    const auto report = [&](gl::dist::Communicator& comm) {
        if (comm.rank() == 0)
            fmt::print("parallel: {} over {} workers ({} backend); global batch {}{}\n", a.parallel, comm.size(),
                       comm.backend(), a.batch_size,
                       a.parallel == "pp" ? fmt::format(" in {} micro-batches, {}", a.micro_batches, a.schedule) : "");
        gl::dist::fit_parallel(comm, new_model, train, &test, o,
                               [&](const gl::training::EpochReport& e) { print_epoch(e, a.epochs); });
        if (comm.rank() == 0)
            fmt::print("rank 0 sent {:.1f} MB and received {:.1f} MB in {} messages\n", comm.stats().bytes_sent * 1e-6,
                       comm.stats().bytes_received * 1e-6, comm.stats().messages_sent);
    };
    if (a.backend == "threads") {
        gl::cli::TrainProfile profiling(a.profile);  // one process: every rank's thread in one trace
        gl::dist::run_threads(a.workers, report, 300.0);
        profiling.finish();
    } else if (a.backend == "mpi") {
        auto& comm = gl::dist::MpiCommunicator::world();
        comm.set_timeout_s(300.0);
        gl::cli::TrainProfile profiling(a.profile, comm.rank());  // a trace per rank: profile merge joins them
        report(comm);
        profiling.finish();
    }
    return 0;
}

// The combinations of options that cannot work, found before the data sets are loaded.
void check_train_args(const TrainArgs& a) {
    // A device that is not there stops at once, with the driver's reason, before any data loads.
    gl::device::check_available(gl::parse_device(a.device));
    if (!a.profile.empty() && !gl::prof::kCompiledIn)
        throw gl::Error("--profile: this build has the profiler compiled out (meson -Dprofiler=false); "
                        "reconfigure with -Dprofiler=true to profile");
    if (a.device != "cpu" && (a.workers > 1 || a.precision != "fp32" || a.memory))
        throw gl::Error("--device " + a.device + " trains one worker in fp32 without --memory; drop --workers, "
                        "--precision or --memory, or use --device cpu");
    if (a.backend == "nccl")
        throw gl::Error(std::string("the nccl backend all-reduces GPU buffers, and training here runs on the CPU; ") +
                        (gl::dist::nccl_available() ? "use --backend threads or mpi"
                                                    : "this build has no NCCL either; use --backend threads or mpi"));
    const bool conv_net = a.model == "cnn" || a.model == "resnet";
    if (conv_net && a.precision != "fp32")
        throw gl::Error("--precision " + a.precision + " is for --model mlp: the convolution kernels are float32; "
                        "use --precision fp32 with --model " + a.model);
    const bool parallel = a.workers > 1 || a.backend != "threads";
    if (parallel && (a.precision != "fp32" || a.memory))
        throw gl::Error("--precision and --memory are for one worker; data-parallel training runs in fp32 "
                        "without memory accounting");
    if (parallel && !a.allocator.empty())
        throw gl::Error("--allocator is for one worker; data-parallel training allocates with malloc: drop "
                        "--allocator, or --workers/--backend");
    if ((a.qat || !a.save.empty()) && parallel)
        throw gl::Error("--qat and --save are for one worker; drop --workers/--backend");
    if (a.model == "resnet" && a.device != "cpu")
        throw gl::Error("--model resnet trains on the CPU: batch norm has no device kernels yet; use --device cpu, or "
                        "--model cnn or mlp on --device " + a.device);
    if (a.model != "mlp" && a.model != "cnn" && (a.qat || !a.save.empty()))
        throw gl::Error("--qat and --save are for --model mlp and --model cnn (the model file holds Linear and Conv2d "
                        "layers); drop them or use --model mlp or cnn");
    if (a.qat && a.precision != "fp32")
        throw gl::Error("--qat fine-tunes in fp32 with fake INT8 quantization; drop --precision");
    if (!a.qat && (a.per_tensor || a.qat_epochs != 1))
        throw gl::Error("--qat-epochs and --per-tensor belong to --qat; add --qat");
    if (!a.save.empty()) {
        const auto folder = std::filesystem::absolute(a.save).parent_path();
        if (!std::filesystem::is_directory(folder) || access(folder.c_str(), W_OK) != 0)
            throw gl::Error(fmt::format("--save {}: cannot write in {}; choose another path", a.save, folder.string()));
    }
    if ((a.parallel == "tp" || a.parallel == "pp") && (a.model == "cnn" || a.model == "resnet"))
        throw gl::Error("--parallel " + a.parallel + " splits the layers of an MLP; use --model mlp, mlp-1024 or deep-mlp "
                        "(or --parallel ddp for --model " + a.model + ")");
    if ((a.micro_batches != 4 || a.schedule != "1f1b") && a.parallel != "pp")
        throw gl::Error("--micro-batches and --schedule belong to --parallel pp; add it or drop them");
    if (a.parallel == "pp" && static_cast<std::size_t>(a.micro_batches) > a.batch_size)
        throw gl::Error(fmt::format("--micro-batches {} is more than --batch-size {}; each micro-batch needs a row",
                                    a.micro_batches, a.batch_size));
    if (a.backend != "threads") return;  // under MPI the workers are the processes, known later
    const auto workers = static_cast<std::size_t>(a.workers);
    if (a.batch_size < workers)
        throw gl::Error(fmt::format("--batch-size {} is smaller than --workers {}; each worker needs at least one "
                                    "example of every batch",
                                    a.batch_size, a.workers));
    if (a.parallel == "ddp" && a.batch_size % workers != 0)
        throw gl::Error(fmt::format("--batch-size {} is not a multiple of --workers {}; DDP gives each worker an "
                                    "equal share of the batch",
                                    a.batch_size, a.workers));
}

gl::training::FitOptions fit_options(const TrainArgs& a) {
    gl::training::FitOptions opt;
    opt.epochs = a.epochs;
    opt.batch_size = a.batch_size;
    opt.lr = a.lr;
    opt.optimizer = a.optimizer;
    opt.seed = a.seed;
    opt.precision.dtype = gl::training::parse_precision(a.precision);
    opt.precision.loss_scaling = !a.no_loss_scaling;
    opt.precision.master_weights = !a.no_master_weights;
    opt.device.device = gl::parse_device(a.device);
    opt.device.read_loss_every_step = a.item_every_step;
    return opt;
}

int cmd_train(TrainArgs a) {
    if (a.backend.empty()) a.backend = gl::dist::launched_by_mpirun() ? "mpi" : "threads";
    check_train_args(a);
    if (!a.gemm.empty()) gl::kernels::set_default_gemm(a.gemm);
    if (a.threads > 0) gl::set_num_threads(a.threads);
    gl::kernels::conv::set_conv_algorithm(a.conv_algo);
    const std::string dir = a.data.empty() ? gl::default_fashion_mnist_dir().string() : a.data;
    std::shared_ptr<const gl::Dataset> train = std::make_shared<gl::MnistDataset>(dir, gl::MnistSplit::Train);
    if (a.limit > 0 && static_cast<std::size_t>(a.limit) < train->size())
        train = gl::SubsetDataset::first(train, static_cast<std::size_t>(a.limit));
    const gl::MnistDataset test(dir, gl::MnistSplit::Test);
    const gl::training::FitOptions opt = fit_options(a);
    gl::training::check_fit(train.get(), &test, opt);  // before any output: an error is the only line
    if (a.workers > 1 || a.backend != "threads") {
        if (a.backend != "mpi" || gl::dist::MpiCommunicator::world().rank() == 0)
            fmt::print("data:   {} ({} training, {} test examples)\n", dir, train->size(), test.size());
        return cmd_train_parallel(a, opt, train, test);
    }
    // The allocators come after the datasets (which are not counted) and before the model
    // and optimizer (which must come from them to be counted).
    gl::memory::CachingAllocator cache;
    const std::string allocator = a.allocator_or_default();
    gl::Allocator& direct_or_cached = allocator == "caching" ? static_cast<gl::Allocator&>(cache) : gl::cpu_allocator();
    gl::memory::TrackingAllocator tracker(direct_or_cached);
    gl::memory::DefaultAllocatorScope use(a.memory ? static_cast<gl::Allocator&>(tracker) : direct_or_cached);
    gl::memory::MemoryStats per_step;  // the largest of each step's peaks
    gl::Rng rng(a.seed);
    auto net = make_model(a.model, rng, train->example_shape().back());
    fmt::print("model:  {} ({} parameters)\n", net->describe(), net->parameter_count());
    fmt::print("data:   {} ({} training, {} test examples)\n", dir, train->size(), test.size());
    fmt::print("setup:  {} lr {} batch {} seed {} gemm {} threads {} allocator {}\n", a.optimizer, a.lr, a.batch_size,
               a.seed, gl::kernels::default_gemm().name, gl::get_num_threads(), allocator);
    if (a.device != "cpu")
        fmt::print("device: {} (model, optimizer state and batches there; the loss is read {})\n", a.device,
                   a.item_every_step ? "every step" : "once per epoch");
    const gl::DType low = opt.precision.dtype;
    if (low != gl::DType::Float32)
        fmt::print("precision: {} matmuls ({} GEMM, FP32 accumulation), loss scaling {}, FP32 master weights {}\n",
                   a.precision, gl::kernels::best_lowp_gemm(low).name, a.no_loss_scaling ? "off" : "on",
                   a.no_master_weights ? "off" : "on");
    int epoch = 1;
    ProgressBar bar(1, a.epochs);
    gl::cli::TrainProfile profiling(a.profile);
    gl::training::fit(
        *net, train, &test, opt,
        [&](const gl::training::EpochReport& e) {
            print_epoch(e, a.epochs, low != gl::DType::Float32, a.device != "cpu");
            bar = ProgressBar(++epoch, a.epochs);
            tracker.reset_peaks();  // leave the evaluation out of the next step's peaks
        },
        [&](std::size_t done, std::size_t total, double loss) {
            bar.update(done, total, loss);
            if (a.memory) {
                per_step = gl::training::max_of(per_step, tracker.stats());
                tracker.reset_peaks();
            }
        });
    profiling.finish();
    if (a.qat) {
        // --qat is for --model mlp and cnn (check_train_args), which make_model builds as Sequentials.
        auto* seq = dynamic_cast<gl::nn::Sequential*>(net.get());
        gl::check(seq != nullptr, "--qat needs --model mlp or cnn");
        gl::cli::qat_finetune(*seq, train, test, opt, a.qat_epochs, !a.per_tensor, a.save);
    } else if (!a.save.empty()) {
        gl::quant::save_float_model(*net, a.save);
        fmt::print("written: {} ({} bytes)\n", a.save, gl::cli::file_bytes(a.save));
    }
    if (a.memory) {
        fmt::print("memory of a training step (the largest peak of any step; the dataset is not counted):\n{}",
                   gl::training::format_memory_table(per_step, false));
        fmt::print("  (each category's peak is its own; the total's is the most held at once)\n");
    }
    if (a.verbose && (a.model == "cnn" || a.model == "resnet"))
        fmt::print("convolution algorithms ({}):\n{}", a.conv_algo == "auto" ? "autotuned: the fastest measured"
                                                                             : "fixed: " + a.conv_algo,
                   gl::kernels::conv::format_tune_table(gl::kernels::conv::tune_table()));
    if (allocator == "caching") {
        const auto c = cache.stats();
        fmt::print("caching allocator: {} hits, {} misses (hit rate {:.4f}), {} cached, peak reserved {}\n", c.hits,
                   c.misses, c.hit_rate(), gl::training::format_bytes(static_cast<double>(c.bytes_cached)),
                   gl::training::format_bytes(static_cast<double>(c.peak_reserved)));
    }
    return 0;
}

// conv-tune: one training step of the model on a batch of zeros with the autotuner on,
// so every layer's three passes are timed, then the table of choices.
int cmd_conv_tune(const std::string& model, int batch, int threads) {
    if (threads > 0) gl::set_num_threads(threads);
    gl::kernels::conv::set_conv_algorithm("auto");
    gl::kernels::conv::clear_tune_cache();
    gl::Rng rng(0);
    auto net = make_model(model, rng, 28 * 28);
    const gl::Tensor images = gl::zeros({batch, 28 * 28});
    std::vector<std::int32_t> labels(static_cast<std::size_t>(batch), 0);
    const gl::Tensor targets = gl::from_vector<std::int32_t>(labels, {batch});
    gl::nn::CrossEntropyLoss loss;
    loss((*net)(images), targets).backward();
    fmt::print("convolution algorithms for {} on 28x28 images, batch {}, {} threads (each time the best of 2 runs "
               "after a warm-up; one run where that was over 4x the fastest):\n{}",
               model, batch, gl::get_num_threads(), gl::kernels::conv::format_tune_table(gl::kernels::conv::tune_table()));
    return 0;
}

// Creates @p dir if needed and checks that files can be written in it.
void check_writable_folder(const std::string& dir) {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec || !std::filesystem::is_directory(dir))
        throw gl::Error(fmt::format("cannot use {} as the output folder ({}); choose another with --out", dir,
                                    ec ? ec.message() : "it is not a folder"));
    if (access(dir.c_str(), W_OK) != 0)
        throw gl::Error(fmt::format("cannot write in the output folder {} ({}); choose another with --out", dir,
                                    std::strerror(errno)));
}

// The time now, UTC, as 2026-12-01T01:36:48Z.
std::string utc_now() {
    const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
    std::tm utc{};
    gmtime_r(&now, &utc);
    char text[32];
    std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
    return text;
}

int cmd_claims(bool quick, const std::string& out_dir, const std::vector<std::string>& only, const std::string& data,
               std::uint64_t seed) {
    // Before the experiments, not after minutes of them.
    check_writable_folder(out_dir);
    if (!data.empty() && !std::filesystem::is_directory(data))
        throw gl::Error(fmt::format("--data {} is not a folder; give the folder that holds the MNIST-format files",
                                    data));
    gl::claims::Context ctx;
    ctx.quick = quick;
    ctx.data_dir = data;
    ctx.seed = seed;
    ctx.log = &std::cerr;
    gl::claims::RunInfo info;
    info.machine = machine_summary();
    info.commit = GRADLAB_COMMIT;
    info.build_type = GRADLAB_BUILD_TYPE;
    info.date = utc_now();
    info.quick = quick;
    fmt::print("gradlab claims report{}\nmachine: {}\ncommit: {} ({} build), {}\n", quick ? " (quick)" : "",
               info.machine, info.commit, info.build_type, info.date);
    std::fflush(stdout);
    const auto results = gl::claims::run_claims(ctx, only);
    gl::claims::print_table(results, std::cout);
    // Write to temporary names and rename, so an interrupted run leaves no half-written report.
    const auto md_path = std::filesystem::path(out_dir) / "claims.md";
    const auto json_path = std::filesystem::path(out_dir) / "claims.json";
    {
        std::ofstream(md_path.string() + ".tmp") << gl::claims::to_markdown(results, info);
        std::ofstream(json_path.string() + ".tmp") << gl::claims::to_json(results, info).dump(2) << "\n";
    }
    std::filesystem::rename(md_path.string() + ".tmp", md_path);
    std::filesystem::rename(json_path.string() + ".tmp", json_path);
    fmt::print("written: {} and {}\n", md_path.string(), json_path.string());
    return 0;
}

// Parses all of @p s as a T; false when it is not a number of that type or out of its range
// (CLI11's own conversion saturates: 99999999999999999999 would become 2^63-1).
template <class T>
bool parse_number(const std::string& s, T& value) {
    const char* begin = s.data() + (s.starts_with('+') ? 1 : 0);  // from_chars takes no '+'
    const char* end = s.data() + s.size();
    const auto [ptr, ec] = std::from_chars(begin, end, value);
    return ec == std::errc() && ptr == end;
}

// Validators that name what was wrong with the value and what would be right.
const CLI::Validator kCount(
    [](std::string& s) {
        std::int64_t n = 0;
        return parse_number(s, n) && n >= 1 ? std::string()
                                           : "'" + s + "' is not a count; give a whole number from 1 to 2^63-1";
    },
    "N >= 1");
const CLI::Validator kPositiveFinite(
    [](std::string& s) {
        double x = 0;
        return parse_number(s, x) && std::isfinite(x) && x > 0
                   ? std::string()
                   : "'" + s + "' is not a positive finite number; give one such as 0.001";
    },
    "X > 0");
const CLI::Validator kUnsigned(
    [](std::string& s) {
        std::uint64_t n = 0;
        return parse_number(s, n) ? std::string() : "'" + s + "' is not a whole number from 0 to 2^64-1";
    },
    "N >= 0");

std::vector<std::string> subcommand_names(CLI::App& app) {
    std::vector<std::string> names;
    for (const CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) names.push_back(sub->get_name());
    return names;
}

// The name of the subcommand in argv (for "see gradlab NAME --help"), or empty.
std::string subcommand_named(CLI::App& app, int argc, char** argv) {
    const std::vector<std::string> names = subcommand_names(app);
    for (int i = 1; i < argc; ++i)
        if (std::find(names.begin(), names.end(), argv[i]) != names.end()) return argv[i];
    return "";
}

// One line for any mistake on the command line, naming it and where help is; exit code 2.
// --help prints the help and exits 0, as CLI11 does.
int parse_failed(CLI::App& app, const CLI::ParseError& e, int argc, char** argv) {
    if (e.get_exit_code() == 0) return app.exit(e);
    const std::vector<std::string> names = subcommand_names(app);
    if (argc >= 2 && argv[1][0] != '-' && std::find(names.begin(), names.end(), argv[1]) == names.end()) {
        fmt::print(stderr, "gradlab: error: unknown command '{}'; the commands are {} (see gradlab --help)\n", argv[1],
                   join(names, ", "));
    } else if (const std::string sub = subcommand_named(app, argc, argv); sub.empty()) {
        fmt::print(stderr, "gradlab: error: {}{}; the commands are {} (see gradlab --help)\n",
                   argc >= 2 ? fmt::format("'{}' comes before any command: ", argv[1]) : "", e.what(),
                   join(names, ", "));
    } else {
        fmt::print(stderr, "gradlab: error: {}: {} (see gradlab {} --help)\n", sub, e.what(), sub);
    }
    return 2;
}

}  // namespace

/// A grid of float [1, 28, 28] tiles in [0, 1] (clamped) with 2-pixel gaps, as an 8-bit image.
static gl::Image tile_grid(const std::vector<gl::Tensor>& tiles, int columns) {
    const int size = 28, gap = 2, rows = (static_cast<int>(tiles.size()) + columns - 1) / columns;
    gl::Image sheet{rows * (size + gap) + gap, columns * (size + gap) + gap, 1, {}};
    sheet.pixels.assign(static_cast<std::size_t>(sheet.height) * sheet.width, 255);
    for (std::size_t t = 0; t < tiles.size(); ++t) {
        const int top = gap + static_cast<int>(t) / columns * (size + gap), left = gap + static_cast<int>(t) % columns * (size + gap);
        const float* v = tiles[t].data<float>();
        for (int y = 0; y < size; ++y)
            for (int x = 0; x < size; ++x)
                sheet.pixels[static_cast<std::size_t>(top + y) * sheet.width + left + x] =
                    static_cast<std::uint8_t>(std::lround(255.0f * std::clamp(v[y * size + x], 0.0f, 1.0f)));
    }
    return sheet;
}

/// `gradlab data contact-sheet OUT.png`: 6 images of Fashion-MNIST, each as it is (first
/// column) and then 8 draws of the training augmentation (seeded per sample and epoch).
static int cmd_contact_sheet(const std::string& out, const std::string& data_dir) {
    const std::string dir = data_dir.empty() ? gl::default_fashion_mnist_dir().string() : data_dir;
    const gl::MnistFiles files = gl::read_mnist_files(dir, gl::MnistSplit::Test);
    const gl::Compose augment({std::make_shared<gl::RandomResizedCrop>(28, 28, 0.5f, 1.0f),
                               std::make_shared<gl::RandomHorizontalFlip>(),
                               std::make_shared<gl::ColorJitter>(0.4f, 0.4f, 0.0f, 0.0f)});
    std::vector<gl::Tensor> tiles;
    for (std::size_t i = 0; i < 6; ++i) {
        gl::Image image{28, 28, 1, {}};
        image.pixels.assign(files.images.bytes.begin() + static_cast<std::ptrdiff_t>(i * 784),
                            files.images.bytes.begin() + static_cast<std::ptrdiff_t>((i + 1) * 784));
        const gl::Tensor original = gl::to_tensor(image);
        tiles.push_back(original);
        for (std::uint64_t epoch = 0; epoch < 8; ++epoch) {
            gl::Rng rng = gl::sample_rng({0, epoch}, i);
            tiles.push_back(augment.apply(original, rng));
        }
    }
    const std::vector<std::uint8_t> png = gl::encode_image(tile_grid(tiles, 9), gl::ImageFormat::Png);
    std::ofstream file(out, std::ios::binary);
    file.write(reinterpret_cast<const char*>(png.data()), static_cast<std::streamsize>(png.size()));
    if (!file) throw gl::Error("contact-sheet: cannot write " + out);
    fmt::print("wrote {} (6 test images, each followed by 8 augmented draws)\n", out);
    return 0;
}

/// `gradlab data throughput DIR`: batches per second of the training pipeline (the same
/// transforms as tools/peers/dataloader_torch.py) over an image folder, no model.
static int cmd_throughput(const std::string& dir, std::size_t workers, std::size_t batches, std::size_t batch_size) {
    gl::ImageFolderOptions options;
    options.transform = std::make_shared<gl::Compose>(std::vector<std::shared_ptr<const gl::Transform>>{
        std::make_shared<gl::RandomResizedCrop>(28, 28, 0.5f, 1.0f), std::make_shared<gl::RandomHorizontalFlip>(),
        std::make_shared<gl::ColorJitter>(0.4f, 0.4f, 0.0f, 0.0f),
        std::make_shared<gl::Normalize>(std::vector<float>{0.286f}, std::vector<float>{0.353f})});
    const auto data = std::make_shared<gl::ImageFolder>(dir, options);
    const gl::DataLoader loader(data, {.batch_size = batch_size, .shuffle = true, .num_workers = workers});
    const auto start = std::chrono::steady_clock::now();
    auto end = start;
    std::size_t made = 0;
    for (std::uint64_t epoch = 0; made < batches; ++epoch) {
        const gl::EpochRange range = loader.epoch(epoch);
        // Ask for no batch past the last one counted; the clock stops at the last batch,
        // before the range stops the workers (an epoch's end inside the run is counted).
        for (auto it = range.begin(); it != range.end();) {
            if (++made == batches) break;
            ++it;
        }
        end = std::chrono::steady_clock::now();
    }
    const double seconds = std::chrono::duration<double>(end - start).count();
    fmt::print("{{\"workers\": {}, \"batches\": {}, \"batch_size\": {}, \"seconds\": {:.4f}, \"batches_per_second\": {:.2f}}}\n",
               loader.num_workers(), made, batch_size, seconds, static_cast<double>(made) / seconds);
    return 0;
}

int main(int argc, char** argv) {
    CLI::App app{"gradlab: deep-learning hardware and software, reproduced"};
    app.require_subcommand(1);

    app.add_subcommand("info", "CPU model and features, cores, caches, CUDA devices");

    TrainArgs t;
    auto* train = app.add_subcommand("train", "train SimpleNet (784-128-10), a CNN or a small ResNet on an MNIST-format dataset");
    train->add_option("--epochs", t.epochs, "passes over the training set")->check(CLI::Range(1, 1000));
    train->add_option("--batch-size", t.batch_size, "examples per step (with several workers: over all of them)")->check(CLI::Range(1, 1 << 20));
    train->add_option("--lr", t.lr, "learning rate")->check(kPositiveFinite);
    train->add_option("--optimizer", t.optimizer, "sgd (momentum 0.9) or adam")->check(CLI::IsMember({"sgd", "adam"}));
    train->add_option("--seed", t.seed, "seed for initialisation and shuffling")->check(kUnsigned);
    train->add_option("--data", t.data, "MNIST-format folder (default: Debian's Fashion-MNIST)");
    train->add_option("--gemm", t.gemm, "GEMM kernel to use (see `gradlab info`)");
    train->add_option("--device", t.device, "where model, optimizer state and batches live: cpu, cuda (a GPU) or "
                                            "cuda_cpu (the same CUDA kernels on the CPU runtime)");
    train->add_flag("--item-every-step", t.item_every_step,
                    "read the loss every step (.item()): one host synchronisation per step on a device");
    train->add_option("--limit", t.limit, "use only the first N training examples")->check(kCount);
    train->add_option("--threads", t.threads, "intra-op threads (default: the CPUs this process may use)")
        ->check(CLI::Range(1, 256));
    train->add_flag("--memory", t.memory, "count memory by category (parameters, gradients, optimizer state, "
                                          "saved activations, temporaries) and print each step's peaks");
    train->add_option("--allocator", t.allocator,
                      "caching (the default: reuse freed blocks of the same size class) or direct (malloc per tensor)")
        ->check(CLI::IsMember({"direct", "caching"}));
    train->add_option("--precision", t.precision, "fp32, or mixed precision with fp16 or bf16 matmuls")
        ->check(CLI::IsMember({"fp32", "fp16", "bf16"}));
    train->add_flag("--no-loss-scaling", t.no_loss_scaling, "mixed precision without dynamic loss scaling");
    train->add_flag("--no-master-weights", t.no_master_weights,
                    "mixed precision with weights kept in 16 bits (no FP32 master copy)");
    train->add_option("--workers", t.workers, "data-parallel workers (threads; under mpirun: the processes)")
        ->check(CLI::Range(1, 1024));
    train->add_option("--parallel", t.parallel, "dp (a master scatters and gathers), ddp (all-reduce), tp (tensor "
                                                "parallel MLP) or pp (pipeline: one stage per worker)")
        ->check(CLI::IsMember({"dp", "ddp", "tp", "pp"}));
    train->add_option("--micro-batches", t.micro_batches, "pp: micro-batches per global batch")->check(CLI::Range(1, 1 << 20));
    train->add_option("--schedule", t.schedule, "pp: gpipe (all forwards, then all backwards) or 1f1b")
        ->check(CLI::IsMember({"gpipe", "1f1b"}));
    train->add_option("--model", t.model, "mlp (SimpleNet 784-128-10), mlp-1024 (784-1024-1024-10), deep-mlp "
                                          "(784-256-256-256-10), cnn (2 conv + pool + FC) or resnet (small, with batch norm)")
        ->check(CLI::IsMember({"mlp", "mlp-1024", "deep-mlp", "cnn", "resnet"}));
    std::vector<std::string> conv_names{"auto"};
    for (const auto& c : gl::kernels::conv::conv_algorithms()) conv_names.push_back(c.name);
    train->add_option("--conv-algo", t.conv_algo, "convolution algorithm: auto (time each on first use, keep the fastest) or a fixed one")
        ->check(CLI::IsMember(conv_names));
    train->add_flag("--verbose", t.verbose, "print the convolution algorithm chosen for each layer and pass");
    train->add_option("--backend", t.backend, "threads, mpi or nccl (default: mpi under mpirun, else threads)")
        ->check(CLI::IsMember({"threads", "mpi", "nccl"}));
    train->add_option("--profile", t.profile, "profile 20 steps (after one warmup step): write the per-op table, a "
                                              "Chrome trace and a diagnosis into this folder");
    train->add_option("--save", t.save, "write the trained model to this .glm file (INT8 with --qat)");
    train->add_flag("--qat", t.qat, "then fine-tune with fake INT8 quantization and convert to INT8 (claim Q-1)");
    train->add_option("--qat-epochs", t.qat_epochs, "QAT fine-tuning epochs")->check(CLI::Range(1, 1000));
    train->add_flag("--per-tensor", t.per_tensor, "QAT: one weight scale per tensor (default: per output channel)");


    bool quick = false;
    std::string out_dir = "results";
    std::vector<std::string> only;
    std::string claims_data;
    std::uint64_t claims_seed = 0;
    auto* claims = app.add_subcommand("claims", "run the experiments behind the lecture's claims and print verdicts");
    claims->add_flag("--quick", quick, "keep the whole report within a few minutes");
    claims->add_option("--out", out_dir, "folder for claims.md and claims.json");
    // Every claim of CLAIMS.md, built or not: one without an experiment gets its "not built yet" row.
    std::vector<std::string> claim_ids;
    for (const auto& c : gl::claims::lecture_claims()) claim_ids.push_back(c.id);
    claims->add_option("--only", only, "claim IDs to run (e.g. FW-1 FW-2)")->check(CLI::IsMember(claim_ids));
    claims->add_option("--data", claims_data, "MNIST-format folder (default: Debian's Fashion-MNIST)");
    claims->add_option("--seed", claims_seed, "seed for every experiment")->check(kUnsigned);

    std::string export_dir, export_format = "jpeg", export_data;
    std::size_t export_limit = 0;
    auto* data_cmd = app.add_subcommand("data", "data set tools");
    data_cmd->require_subcommand(1);
    auto* export_images = data_cmd->add_subcommand(
        "export-images", "write Fashion-MNIST's training images as DIR/CLASS/NNNNN.jpg (an image folder)");
    export_images->add_option("DIR", export_dir, "a new (or empty) folder")->required();
    export_images->add_option("--format", export_format, "jpeg or png")->check(CLI::IsMember({"jpeg", "png"}));
    export_images->add_option("--data", export_data, "MNIST-format folder (default: Debian's Fashion-MNIST)");
    export_images->add_option("--limit", export_limit, "write only the first N images")->check(kCount);

    std::string sheet_out;
    auto* contact_sheet = data_cmd->add_subcommand("contact-sheet", "a PNG of augmented Fashion-MNIST samples");
    contact_sheet->add_option("OUT", sheet_out, "the PNG file to write")->required();
    contact_sheet->add_option("--data", export_data, "MNIST-format folder (default: Debian's Fashion-MNIST)");

    std::string throughput_dir;
    std::size_t throughput_workers = 0, throughput_batches = 100, throughput_batch_size = 64;
    auto* throughput = data_cmd->add_subcommand("throughput", "batches/s of the augmentation pipeline over an image folder");
    throughput->add_option("DIR", throughput_dir, "an image folder (gradlab data export-images makes one)")->required();
    throughput->add_option("--workers", throughput_workers, "loader worker threads")->check(CLI::Range(0, 256));
    throughput->add_option("--batches", throughput_batches, "batches to time")->check(CLI::Range(1, 1000000));
    throughput->add_option("--batch-size", throughput_batch_size, "images per batch")->check(CLI::Range(1, 65536));
    gl::cli::QuantizeArgs qa;
    auto* quantize = app.add_subcommand("quantize", "post-training INT8 quantization of a saved float model (claim Q-1)");
    quantize->add_option("--model", qa.model, "float model file (gradlab train --save)")->required();
    quantize->add_option("--out", qa.out, "INT8 model file to write");
    quantize->add_option("--calibrate", qa.calibrate, "calibration examples from the training set")->check(kCount);
    quantize->add_option("--observer", qa.observer, "how activation ranges are chosen")
        ->check(CLI::IsMember({"minmax", "moving_average", "percentile", "mse"}));
    quantize->add_flag("--per-channel", qa.per_channel, "one weight scale per output channel (default: per tensor)");
    quantize->add_option("--data", qa.data, "MNIST-format folder (default: Debian's Fashion-MNIST)");
    gl::cli::ProfileArgs pa;
    std::vector<std::string> merge_inputs;
    std::string merge_out = "merged_trace.json";
    auto* profile = app.add_subcommand("profile", "profile one of lab 10's bad pipelines (claim PROF-1): per-op table, "
                                                  "Chrome trace, memory timeline and a diagnosis");
    profile->add_option("--pipeline", pa.pipeline, "tiny-batch, slow-loading, memory-cap, data-parallel or host-sync")
        ->check(CLI::IsMember({"tiny-batch", "slow-loading", "memory-cap", "data-parallel", "host-sync"}));
    profile->add_flag("--remedy", pa.remedy, "apply the lecture's remedy for the planted problem");
    profile->add_option("--out", pa.out, "folder for trace.json, ops.txt, memory.csv and diagnosis.txt");
    auto* merge = profile->add_subcommand("merge", "merge the traces of several ranks into one timeline, a track per rank");
    merge->add_option("traces", merge_inputs, "trace files (train --profile writes trace.json, trace_rank<R>.json)")
        ->required()->check(CLI::ExistingFile);
    merge->add_option("--out", merge_out, "the merged trace file");
    gl::cli::ExportOnnxArgs ea;
    auto* export_onnx = app.add_subcommand("export-onnx", "write a float SimpleNet (gradlab train --save) as ONNX "
                                                          "(claim DEPLOY-1)");
    export_onnx->add_option("--model", ea.model, "float model file (gradlab train --save)")->required();
    export_onnx->add_option("--out", ea.out, "ONNX file to write")->required();
    export_onnx->add_option("--batch-size", ea.batch_size, "the batch dimension of the graph")->check(CLI::Range(1, 65536));
    export_onnx->add_option("--data", ea.data, "MNIST-format folder (default: Debian's Fashion-MNIST)");
    gl::cli::InferArgs ia;
    auto* infer = app.add_subcommand("infer", "run an ONNX classifier on the test set with the static-graph executor, "
                                              "no autograd (ops: Gemm, MatMul, Add, Sub, Mul, Div, Neg, Relu, Sqrt, "
                                              "Transpose, LogSoftmax; float32)");
    infer->add_option("MODEL", ia.model, "ONNX file (gradlab export-onnx, or another exporter with those ops)")->required();
    infer->add_option("--data", ia.data, "MNIST-format folder (default: Debian's Fashion-MNIST)");
    infer->add_option("--batch-size", ia.batch_size, "batch for a symbolic batch dimension")->check(CLI::Range(1, 65536));
    infer->add_option("--limit", ia.limit, "test examples to run (default: all)")->check(CLI::Range(1, 1 << 30));
    std::string tune_model = "cnn";
    int tune_batch = 64, tune_threads = 0;
    auto* tune = app.add_subcommand("conv-tune", "time every convolution algorithm on each layer of the CNN or ResNet "
                                                 "and print the autotuner's choices");
    tune->add_option("--model", tune_model, "cnn or resnet")->check(CLI::IsMember({"cnn", "resnet"}));
    tune->add_option("--batch-size", tune_batch, "images per batch")->check(CLI::Range(1, 4096));
    tune->add_option("--threads", tune_threads, "intra-op threads (default: the CPUs this process may use)")
        ->check(CLI::Range(1, 256));

    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        return parse_failed(app, e, argc, argv);
    }
    try {
        if (app.got_subcommand("info")) return cmd_info();
        if (app.got_subcommand("train")) return cmd_train(t);
        if (app.got_subcommand("quantize")) return gl::cli::cmd_quantize(qa);
        if (export_onnx->parsed()) return gl::cli::cmd_export_onnx(ea);
        if (infer->parsed()) return gl::cli::cmd_infer(ia);
        if (app.got_subcommand("conv-tune")) return cmd_conv_tune(tune_model, tune_batch, tune_threads);
        if (merge->parsed()) return gl::cli::cmd_profile_merge(merge_inputs, merge_out);
        if (profile->parsed()) return gl::cli::cmd_profile(pa);
        if (app.got_subcommand("claims")) return cmd_claims(quick, out_dir, only, claims_data, claims_seed);
        if (throughput->parsed())
            return cmd_throughput(throughput_dir, throughput_workers, throughput_batches, throughput_batch_size);
        if (contact_sheet->parsed()) return cmd_contact_sheet(sheet_out, export_data);
        if (export_images->parsed()) {
            const std::string dir = export_data.empty() ? gl::default_fashion_mnist_dir().string() : export_data;
            const std::size_t n = gl::export_image_folder(dir, export_dir, gl::parse_image_format(export_format),
                                                          export_limit);
            fmt::print("wrote {} {} images of {} to {}\n", n, export_format, dir, export_dir);
            return 0;
        }
    } catch (const std::exception& e) {
        fmt::print(stderr, "gradlab: error: {}\n", e.what());
        return 1;
    }
    return 0;
}
