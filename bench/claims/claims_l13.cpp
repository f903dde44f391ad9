// Lab 13's claims: JIT-1 (capturing a static graph allows fusion, static memory planning
// and fewer launches) and DEPLOY-1 (an exported graph runs ahead of time elsewhere, with
// the same outputs).
//
// JIT-1: SimpleNet's training step run three ways on the same batches:
// eager (define-by-run autograd and optim::Adam), captured (the traced step as a static
// graph, every op its own kernel, every temporary its own buffer) and captured + fused +
// planned (core/graph's passes and memory plan).
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <sstream>

#include "claims.hpp"
#include "data/mnist.hpp"
#include "graph/compiled.hpp"
#include "graph/onnx.hpp"
#include "graph/passes.hpp"
#include "memory/tracking_allocator.hpp"
#include "ops/ops.hpp"
#include "optim/optimizer.hpp"
#include "verdicts_l13.hpp"

namespace gl::claims {
namespace {

using clock_type = std::chrono::steady_clock;

struct Batch {
    Tensor x, y;
};

std::vector<Batch> random_batches(int count, std::int64_t rows, std::uint64_t seed) {
    Rng rng(seed);
    std::vector<Batch> out;
    for (int i = 0; i < count; ++i) {
        Batch b{randn({rows, 784}, rng), empty({rows}, DType::Int32)};
        for (std::int64_t r = 0; r < rows; ++r) b.y.data<std::int32_t>()[r] = static_cast<std::int32_t>(rng.below(10));
        out.push_back(b);
    }
    return out;
}

double seconds_since(clock_type::time_point t0) {
    return std::chrono::duration<double>(clock_type::now() - t0).count();
}

double max_difference(nn::Module& a, nn::Module& b) {
    const auto pa = a.parameters(), pb = b.parameters();
    double worst = 0.0;
    for (std::size_t i = 0; i < pa.size(); ++i)
        for (std::int64_t e = 0; e < pa[i].numel(); ++e)
            worst = std::max(worst, std::abs(static_cast<double>(pa[i].data<float>()[e]) - pb[i].data<float>()[e]));
    return worst;
}

// Eager steps under a tracking allocator: tensor allocations and the bytes allocated on
// top of what the step began with (parameters, optimizer state, the batch).
StepVariant run_eager(nn::Module& net, const std::vector<Batch>& batches, const graph::AdamSettings& adam) {
    StepVariant v;
    v.name = "eager";
    memory::TrackingAllocator tracking;
    const memory::DefaultAllocatorScope scope(tracking);
    optim::Adam opt(net.parameters(), adam.lr, adam.beta1, adam.beta2, adam.eps);
    std::vector<double> times;
    std::size_t allocations = 0;
    for (const Batch& b : batches) {
        opt.zero_grad();
        tracking.reset_peaks();
        const std::size_t held = tracking.stats().total_current;
        const auto t0 = clock_type::now();
        cross_entropy(net.forward(b.x), b.y).backward();
        opt.step();
        times.push_back(seconds_since(t0));
        const auto s = tracking.stats();
        allocations += s.allocations;
        v.peak_bytes = std::max<std::int64_t>(v.peak_bytes, static_cast<std::int64_t>(s.total_peak - held));
    }
    opt.zero_grad();
    v.allocations = static_cast<std::int64_t>(allocations / batches.size());
    v.step_seconds = median(times);
    return v;
}

StepVariant run_captured(const std::string& name, nn::Module& net, const std::vector<Batch>& batches,
                         const graph::AdamSettings& adam, const graph::CompileOptions& options) {
    graph::CompiledTrainingStep step(net, batches[0].x, batches[0].y, adam, options);
    StepVariant v;
    v.name = name;
    memory::TrackingAllocator tracking;
    const memory::DefaultAllocatorScope scope(tracking);
    std::vector<double> times;
    for (const Batch& b : batches) {
        const auto t0 = clock_type::now();
        step.step(b.x, b.y);
        times.push_back(seconds_since(t0));
    }
    const graph::ExecStats per_run = step.executor().per_run();
    v.bytes_moved = per_run.bytes_moved;
    v.kernels = per_run.kernels;
    v.allocations = static_cast<std::int64_t>(tracking.stats().allocations / batches.size());
    v.peak_bytes = step.executor().plan().arena_bytes;
    v.step_seconds = median(times);
    return v;
}

Result jit1(const Context& ctx) {
    Result r;
    const std::int64_t rows = 64;
    const int steps = ctx.quick ? 30 : 100;
    const graph::AdamSettings adam{1e-3, 0.9, 0.999, 1e-8};
    const std::vector<Batch> batches = random_batches(steps, rows, ctx.seed + 13);
    const auto make_net = [&] {
        Rng rng(ctx.seed + 1);
        return nn::make_simple_net(rng);
    };
    auto eager_net = make_net(), captured_net = make_net(), optimized_net = make_net();
    StepVariant eager = run_eager(*eager_net, batches, adam);
    const StepVariant captured = run_captured("captured", *captured_net, batches, adam, {false, false});
    const StepVariant optimized = run_captured("captured + fused + planned", *optimized_net, batches, adam, {true, true});
    // Eager runs the same op list as the captured graph, one kernel per op: its kernels
    // and bytes are the captured graph's counts (autograd's bookkeeping comes on top).
    eager.kernels = captured.kernels;
    eager.bytes_moved = captured.bytes_moved;
    const double diff = std::max(max_difference(*eager_net, *optimized_net), max_difference(*eager_net, *captured_net));

    std::ostringstream m;
    m << "SimpleNet (784-128-10) training step with Adam, batch " << rows << ", " << steps << " steps on the same batches: ";
    for (const StepVariant* v : {static_cast<const StepVariant*>(&eager), &captured, &optimized}) {
        m << v->name << " " << v->kernels << " kernels, " << fixed(static_cast<double>(v->bytes_moved) / 1e6, 2)
          << " MB moved, " << v->allocations << " tensor allocations, peak " << fixed(static_cast<double>(v->peak_bytes) / 1e3, 1)
          << " KB, " << fixed(v->step_seconds * 1e3, 3) << " ms per step; ";
        r.data["variants"].push_back({{"name", v->name},
                                      {"kernels_per_step", v->kernels},
                                      {"bytes_moved_per_step", v->bytes_moved},
                                      {"allocations_per_step", v->allocations},
                                      {"peak_bytes", v->peak_bytes},
                                      {"step_seconds_median", v->step_seconds}});
    }
    m << "weights after " << steps << " steps differ by at most " << fixed(diff * 1e6, 2) << "e-6. "
      << "Eager's kernels and bytes are counted on the captured graph (the same ops, one kernel each); its peak and "
         "allocations are counted by the tracking allocator. Launch counts are the CPU runtime's: a CUDA graph would "
         "replay the optimized step's kernels as one launch.";
    r.measured = m.str();
    r.data["max_weight_difference"] = diff;
    const Judgement j = judge_jit1(eager, captured, optimized, diff);
    r.verdict = j.verdict;
    r.why = j.why;
    return r;
}

// ---- DEPLOY-1 ----

namespace fs = std::filesystem;

double max_abs_difference(const std::vector<float>& a, const std::vector<float>& b) {
    double worst = a.size() == b.size() ? 0.0 : INFINITY;
    for (std::size_t i = 0; i < std::min(a.size(), b.size()); ++i)
        worst = std::max(worst, std::abs(static_cast<double>(a[i]) - b[i]));
    return worst;
}

// The python of the peer venv that `./gradlab test` makes in the build folder (this
// program is build/tools/gradlab), else Debian's.
std::string peer_python() {
    std::error_code ec;
    const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
    const fs::path venv = exe.parent_path().parent_path() / "peer-venv" / "bin" / "python";
    if (!ec && fs::exists(venv)) return venv.string();
    return "/usr/bin/python3";
}

// Runs tools/peers/onnx_runtime.py: onnx.checker on @p model, then ONNX Runtime on the
// batches @p xs; fills the peer's fields of @p m and returns its outputs, concatenated.
std::vector<float> run_onnx_runtime(const std::string& model_bytes, const std::vector<float>& xs, Deploy1Measured& m) {
    const fs::path dir = fs::temp_directory_path() / ("gradlab_deploy1_" + std::to_string(getpid()));
    fs::create_directories(dir);
    const fs::path model = dir / "model.onnx", in = dir / "x.f32", out = dir / "y.f32";
    std::ofstream(model, std::ios::binary).write(model_bytes.data(), static_cast<std::streamsize>(model_bytes.size()));
    std::ofstream(in, std::ios::binary)
        .write(reinterpret_cast<const char*>(xs.data()), static_cast<std::streamsize>(xs.size() * sizeof(float)));
    const std::string cmd = peer_python() + " '" GRADLAB_SOURCE_ROOT "/tools/peers/onnx_runtime.py' '" + model.string() +
                            "' '" + in.string() + "' '" + out.string() + "' 2>&1";
    std::string text;
    int status = -1;
    if (FILE* pipe = popen(cmd.c_str(), "r")) {
        char buf[512];
        while (std::fgets(buf, sizeof buf, pipe)) text += buf;
        const int rc = pclose(pipe);
        status = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
    }
    m.checker_ok = text.find("checker: ok") != std::string::npos;
    std::vector<float> ys;
    if (status == 0) {
        ys.resize(static_cast<std::size_t>(fs::file_size(out) / sizeof(float)));
        std::ifstream(out, std::ios::binary)
            .read(reinterpret_cast<char*>(ys.data()), static_cast<std::streamsize>(ys.size() * sizeof(float)));
        m.ort_ran = true;
    } else {
        while (!text.empty() && text.back() == '\n') text.pop_back();
        m.ort_why_not = status == 3 ? text.substr(text.rfind('\n') + 1) : "the peer script failed: " + text;
        // A file onnx.checker rejected is a failed comparison, not a missing peer.
        m.ort_ran = status != 3 && !m.checker_ok;
    }
    fs::remove_all(dir);
    return ys;
}

// SimpleNet trained briefly (so that accuracy means something), its test batches.
struct Deploy1Setup {
    std::shared_ptr<nn::Sequential> net;
    std::vector<Batch> test;
};

Deploy1Setup deploy1_setup(const Context& ctx, int test_batches, std::int64_t rows) {
    const std::string dir = ctx.data_dir.empty() ? default_fashion_mnist_dir().string() : ctx.data_dir;
    const MnistDataset train(dir, MnistSplit::Train), test(dir, MnistSplit::Test);
    Rng rng(ctx.seed + 2);
    Deploy1Setup s{nn::make_simple_net(rng, train.example_shape().back(), 128, train.num_classes()), {}};
    optim::Adam opt(s.net->parameters(), 1e-3);
    const auto batch_of = [&](const Dataset& d, std::size_t first) {
        std::vector<std::size_t> idx(static_cast<std::size_t>(rows));
        std::iota(idx.begin(), idx.end(), first);
        const gl::Batch b = d.get_batch(idx);
        return Batch{b.inputs, b.targets};
    };
    for (std::size_t step = 0; step < 200; ++step) {
        const Batch b = batch_of(train, step * static_cast<std::size_t>(rows));
        opt.zero_grad();
        cross_entropy(s.net->forward(b.x), b.y).backward();
        opt.step();
    }
    opt.zero_grad();
    for (int i = 0; i < test_batches; ++i) s.test.push_back(batch_of(test, static_cast<std::size_t>(i * rows)));
    return s;
}

std::int64_t correct(const std::vector<float>& scores, const Tensor& targets) {
    const std::int64_t rows = targets.numel(), classes = static_cast<std::int64_t>(scores.size()) / rows;
    std::int64_t n = 0;
    for (std::int64_t r = 0; r < rows; ++r) {
        const float* row = scores.data() + r * classes;
        n += std::max_element(row, row + classes) - row == targets.data<std::int32_t>()[r];
    }
    return n;
}

Result deploy1(const Context& ctx) {
    const std::int64_t rows = 100;
    const int batches = ctx.quick ? 4 : 20;
    Deploy1Setup s = deploy1_setup(ctx, batches, rows);
    nn::Module& net = *s.net;
    Deploy1Measured m;

    // JIT: trace the model's code, optimize, plan, first batch.
    auto t0 = clock_type::now();
    graph::CompiledForward jit(net, s.test[0].x);
    jit(s.test[0].x);
    m.jit_startup_seconds = seconds_since(t0);
    // Export once (the deployment artefact); AOT: read the file, plan, first batch.
    graph::Graph g = graph::capture_forward(net, s.test[0].x);
    graph::optimize(g, false);
    const std::string bytes = graph::export_onnx(g);
    t0 = clock_type::now();
    auto aot = graph::compile(graph::import_onnx(bytes), {});
    const int x_id = aot->graph().find("x");
    aot->bind(x_id, s.test[0].x);
    aot->run();
    m.aot_startup_seconds = seconds_since(t0);

    // Every test batch through eager and our runtime, allocations counted.
    std::vector<double> eager_times, aot_times;
    std::vector<float> aot_outputs;  // every batch's, in order, for ONNX Runtime
    std::int64_t eager_correct = 0, aot_correct = 0, ort_correct = 0;
    std::size_t eager_allocs = 0, aot_allocs = 0;
    for (const Batch& b : s.test) {
        memory::TrackingAllocator tracking;
        const memory::DefaultAllocatorScope scope(tracking);
        t0 = clock_type::now();
        const Tensor eager = net(b.x);
        eager_times.push_back(seconds_since(t0));
        const std::size_t after_eager = tracking.stats().allocations;
        eager_allocs += after_eager;
        t0 = clock_type::now();
        aot->bind(x_id, b.x);
        aot->run();
        aot_times.push_back(seconds_since(t0));
        aot_allocs += tracking.stats().allocations - after_eager;
        const std::vector<float> e = eager.to_vector<float>(), a = aot->output(0).to_vector<float>();
        aot_outputs.insert(aot_outputs.end(), a.begin(), a.end());
        m.eager_vs_aot = std::max(m.eager_vs_aot, max_abs_difference(e, a));
        eager_correct += correct(e, b.y);
        aot_correct += correct(a, b.y);
    }
    m.eager_allocations = static_cast<std::int64_t>(eager_allocs / s.test.size());
    m.aot_allocations = static_cast<std::int64_t>(aot_allocs / s.test.size());
    m.eager_batch_seconds = median(eager_times);
    m.aot_batch_seconds = median(aot_times);

    // ONNX Runtime on every test batch (one process start; the file has a fixed batch).
    std::vector<float> all_x, all_ours;
    for (const Batch& b : s.test) {
        const std::vector<float> x = b.x.to_vector<float>();
        all_x.insert(all_x.end(), x.begin(), x.end());
    }
    const std::vector<float> ort = run_onnx_runtime(bytes, all_x, m);
    if (!ort.empty()) {
        m.aot_vs_ort = ort.size() == aot_outputs.size() ? max_abs_difference(aot_outputs, ort) : INFINITY;
        for (std::size_t i = 0; i < s.test.size() && ort.size() == aot_outputs.size(); ++i) {
            const auto batch_values = static_cast<std::ptrdiff_t>(ort.size() / s.test.size());
            const std::vector<float> part(ort.begin() + static_cast<std::ptrdiff_t>(i) * batch_values,
                                          ort.begin() + static_cast<std::ptrdiff_t>(i + 1) * batch_values);
            ort_correct += correct(part, s.test[i].y);
        }
    }

    Result r;
    const std::int64_t examples = rows * static_cast<std::int64_t>(s.test.size());
    std::ostringstream text;
    text << "SimpleNet (784-128-10, 200 Adam steps on Fashion-MNIST) exported to ONNX (" << bytes.size() << " bytes, "
         << g.nodes.size() << " nodes, opset " << graph::kOnnxOpset << "); " << examples << " test examples in batches of "
         << rows << ": eager accuracy " << fixed(static_cast<double>(eager_correct) / static_cast<double>(examples), 4)
         << ", our runtime on the ONNX file " << fixed(static_cast<double>(aot_correct) / static_cast<double>(examples), 4)
         << " (max |difference| " << fixed(m.eager_vs_aot * 1e6, 3) << "e-6, " << m.aot_allocations
         << " allocations per batch against eager's " << m.eager_allocations << "); ";
    if (m.ort_ran && !ort.empty())
        text << "ONNX Runtime accuracy " << fixed(static_cast<double>(ort_correct) / static_cast<double>(examples), 4)
             << ", max |difference| " << fixed(m.aot_vs_ort * 1e6, 3) << "e-6 from ours; ";
    else
        text << "ONNX Runtime: " << (m.ort_why_not.empty() ? "failed" : m.ort_why_not) << "; ";
    text << "startup to the first output: JIT (trace + passes + plan) " << fixed(m.jit_startup_seconds * 1e3, 2)
         << " ms, AOT (read file + plan) " << fixed(m.aot_startup_seconds * 1e3, 2) << " ms; steady state "
         << fixed(m.aot_batch_seconds * 1e3, 3) << " ms per batch (eager " << fixed(m.eager_batch_seconds * 1e3, 3)
         << " ms). The AOT path needs neither the model's code nor autograd.";
    r.measured = text.str();
    r.data = {{"onnx_bytes", bytes.size()},
              {"eager_vs_aot", m.eager_vs_aot},
              {"ort_ran", m.ort_ran},
              {"checker_ok", m.checker_ok},
              {"aot_vs_ort", m.aot_vs_ort},
              {"eager_accuracy", static_cast<double>(eager_correct) / static_cast<double>(examples)},
              {"aot_accuracy", static_cast<double>(aot_correct) / static_cast<double>(examples)},
              {"ort_accuracy", m.ort_ran ? static_cast<double>(ort_correct) / static_cast<double>(examples) : -1.0},
              {"aot_allocations_per_batch", m.aot_allocations},
              {"eager_allocations_per_batch", m.eager_allocations},
              {"jit_startup_seconds", m.jit_startup_seconds},
              {"aot_startup_seconds", m.aot_startup_seconds},
              {"eager_batch_seconds_median", m.eager_batch_seconds},
              {"aot_batch_seconds_median", m.aot_batch_seconds}};
    const Judgement j = judge_deploy1(m);
    r.verdict = j.verdict;
    r.why = j.why;
    return r;
}

}  // namespace

std::vector<Claim> lab13_claims() {
    return {
        {"JIT-1", "13", "capturing a static graph allows fusion, static memory planning and fewer launches", jit1},
        {"DEPLOY-1", "13", "a captured graph exported (ONNX) with its weights runs ahead of time elsewhere (ONNX "
                           "Runtime, a runtime without autograd) with the same outputs: the JIT vs AOT trade-off",
         deploy1},
    };
}

}  // namespace gl::claims
