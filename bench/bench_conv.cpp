// The convolution family against oneDNN's convolution (the CPU peer), forward pass, on
// the layer shapes of `train --model cnn` and `--model resnet`, in one run:
//
//   GRADLAB_THREADS=2 build/bench/bench_conv [--benchmark_out=conv.json --benchmark_out_format=json]
//
// It ends with a table: per layer, our fastest algorithm against each oneDNN setting.
// Each benchmark is one (layer, algorithm); the counter GFLOP/s counts 2 N K P Q (C/g) R S
// flops (the definition's, whatever the algorithm really does). oneDNN gets the same
// NCHW float32 buffers; its weights are reordered once, outside the timing (a framework
// keeps them in oneDNN's layout). Before timing, each algorithm's output is compared with
// direct's (and oneDNN's with ours), so a wrong result cannot look fast.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "autograd/grad_mode.hpp"
#include "kernels/cpu/conv/autotune.hpp"
#include "kernels/cpu/conv/conv.hpp"
#include "ops/conv.hpp"
#include "ops/ops.hpp"
#include "parallel/thread_pool.hpp"
#include "testkit/conv_problems.hpp"

#if GRADLAB_HAVE_ONEDNN
#include <dlfcn.h>

#include <dnnl.hpp>
#endif

namespace {

namespace kc = gl::kernels::conv;

kc::ConvGeometry layer(std::int64_t N, std::int64_t C, std::int64_t H, std::int64_t K, std::int64_t R,
                       std::int64_t stride, std::int64_t pad) {
    return gl::testkit::conv_geometry(N, C, H, H, K, R, R, stride, pad);
}

// The CNN's two layers and the small ResNet's distinct layers, at batch 64.
const std::vector<std::pair<std::string, kc::ConvGeometry>>& layers() {
    static const std::vector<std::pair<std::string, kc::ConvGeometry>> all = {
        {"cnn.conv1", layer(64, 1, 28, 32, 3, 1, 1)},      {"cnn.conv2", layer(64, 32, 14, 64, 3, 1, 1)},
        {"resnet.stem", layer(64, 1, 28, 16, 3, 1, 1)},    {"resnet.block1", layer(64, 16, 28, 16, 3, 1, 1)},
        {"resnet.block2a", layer(64, 16, 28, 32, 3, 2, 1)}, {"resnet.block2b", layer(64, 32, 14, 32, 3, 1, 1)},
        {"resnet.block3a", layer(64, 32, 14, 64, 3, 2, 1)}, {"resnet.block3b", layer(64, 64, 7, 64, 3, 1, 1)},
        {"resnet.shortcut2", layer(64, 16, 28, 32, 1, 2, 0)}};
    return all;
}

// The problem's buffers and direct's output, made once per layer.
struct Problem {
    std::vector<float> x, w, reference;
    explicit Problem(const kc::ConvGeometry& g)
        : x(gl::testkit::random_values<float>(g.input_size(), 1)), w(gl::testkit::random_values<float>(g.weight_size(), 2)), reference(static_cast<std::size_t>(g.output_size())) {
        kc::forward(kc::ConvAlgo::Direct, g, x.data(), w.data(), reference.data());
    }
};

void set_counters(benchmark::State& state, const kc::ConvGeometry& g) {
    state.counters["GFLOP/s"] = benchmark::Counter(2.0 * static_cast<double>(g.direct_multiplies()) * 1e-9,
                                                   benchmark::Counter::kIsIterationInvariantRate);
    state.counters["threads"] = gl::get_num_threads();
}

void bench_ours(benchmark::State& state, kc::ConvGeometry g, kc::ConvAlgo algo) {
    const Problem p(g);
    std::vector<float> y(static_cast<std::size_t>(g.output_size()));
    kc::forward(algo, g, p.x.data(), p.w.data(), y.data());
    if (const double d = gl::testkit::max_relative_error(y, p.reference); d > 1e-4) {
        state.SkipWithError(("differs from direct by " + std::to_string(d)).c_str());
        return;
    }
    for (auto _ : state) {
        kc::forward(algo, g, p.x.data(), p.w.data(), y.data());
        benchmark::DoNotOptimize(y.data());
    }
    set_counters(state, g);
}

// The two backward passes of the CNN's layers (the training step's largest cost), each
// checked against direct's before timing, like the forward.
void bench_backward(benchmark::State& state, kc::ConvGeometry g, kc::ConvAlgo algo, kc::ConvPass pass) {
    const std::vector<float> x = gl::testkit::random_values<float>(g.input_size(), 1),
                             w = gl::testkit::random_values<float>(g.weight_size(), 2),
                             dy = gl::testkit::random_values<float>(g.output_size(), 3);
    const bool data = pass == kc::ConvPass::BackwardData;
    std::vector<float> out(static_cast<std::size_t>(data ? g.input_size() : g.weight_size())), reference(out.size());
    const auto run = [&](kc::ConvAlgo a, std::vector<float>& o) {
        if (data) kc::backward_data(a, g, dy.data(), w.data(), o.data());
        else kc::backward_weight(a, g, x.data(), dy.data(), o.data());
    };
    run(kc::ConvAlgo::Direct, reference);
    run(algo, out);
    if (const double d = gl::testkit::max_relative_error(out, reference); d > 1e-4) {
        state.SkipWithError(("differs from direct by " + std::to_string(d)).c_str());
        return;
    }
    for (auto _ : state) {
        run(algo, out);
        benchmark::DoNotOptimize(out.data());
    }
    set_counters(state, g);
}

#if GRADLAB_HAVE_ONEDNN
// Debian's oneDNN runs on OpenMP threads: give it as many as ours.
void sync_onednn_threads() {
    using SetFn = void (*)(int);
    static const SetFn set = reinterpret_cast<SetFn>(dlsym(RTLD_DEFAULT, "omp_set_num_threads"));
    if (set) set(gl::get_num_threads());
}

// oneDNN's convolution in one of two settings:
//  - `onednn`: NCHW input and output, the buffers a framework holding plain tensors
//    passes; oneDNN picks its weights' layout (reordered once, outside the timing).
//  - `onednn_blocked`: oneDNN picks every layout (on AVX2/AVX-512, channels blocked by 8
//    or 16, which its direct JIT kernels need); the input is reordered once outside the
//    timing and the output is left in oneDNN's layout, as inside a network that keeps
//    oneDNN's layouts between layers. This is the strongest peer.
void bench_onednn(benchmark::State& state, kc::ConvGeometry g, bool blocked) {
    using namespace dnnl;
    using tag = memory::format_tag;
    const gl::UnpinnedScope unpinned;  // oneDNN's OpenMP threads must not share the pinned caller's CPU
    sync_onednn_threads();
    const Problem p(g);
    std::vector<float> y(static_cast<std::size_t>(g.output_size()));
    engine eng(engine::kind::cpu, 0);
    stream s(eng);
    const memory::dims src{g.batch, g.in_channels, g.in_h, g.in_w}, wei{g.out_channels, g.in_channels, g.kernel_h, g.kernel_w};
    const memory::dims dst{g.batch, g.out_channels, g.out_h(), g.out_w()};
    const memory::dims strides{g.stride_h, g.stride_w}, dilates{g.dilation_h - 1, g.dilation_w - 1};
    const memory::dims pad_l{g.pad_h, g.pad_w};
    // The right/bottom padding that makes oneDNN's output size equal ours (floor division).
    const memory::dims pad_r{(g.out_h() - 1) * g.stride_h + (g.kernel_h - 1) * g.dilation_h + 1 - g.in_h - g.pad_h,
                             (g.out_w() - 1) * g.stride_w + (g.kernel_w - 1) * g.dilation_w + 1 - g.in_w - g.pad_w};
    const auto f32 = memory::data_type::f32;
    const memory::desc user_src_md(src, f32, tag::nchw), user_dst_md(dst, f32, tag::nchw);
    const tag activations = blocked ? tag::any : tag::nchw;
    const convolution_forward::desc desc(prop_kind::forward_inference, algorithm::convolution_direct,
                                         memory::desc(src, f32, activations), memory::desc(wei, f32, tag::any),
                                         memory::desc(dst, f32, activations), strides, dilates, pad_l, pad_r);
    const convolution_forward::primitive_desc pd(desc, eng);
    // Once, outside the timing: every operand into the layout oneDNN chose.
    const auto in_its_layout = [&](const memory::desc& user_md, const memory::desc& its_md, const float* data) {
        memory user(user_md, eng, const_cast<float*>(data)), its(its_md, eng);
        reorder(user, its).execute(s, user, its);
        return its;
    };
    const memory src_mem = in_its_layout(user_src_md, pd.src_desc(), p.x.data());
    const memory wei_mem = in_its_layout(memory::desc(wei, f32, tag::oihw), pd.weights_desc(), p.w.data());
    memory dst_mem(pd.dst_desc(), eng);
    const convolution_forward conv(pd);
    const auto run = [&] {
        conv.execute(s, {{DNNL_ARG_SRC, src_mem}, {DNNL_ARG_WEIGHTS, wei_mem}, {DNNL_ARG_DST, dst_mem}});
        s.wait();
    };
    run();
    memory user_dst(user_dst_md, eng, y.data());
    reorder(dst_mem, user_dst).execute(s, dst_mem, user_dst);  // to NCHW, to compare with direct
    s.wait();
    if (const double d = gl::testkit::max_relative_error(y, p.reference); d > 1e-4) {
        state.SkipWithError(("oneDNN differs from direct by " + std::to_string(d)).c_str());
        return;
    }
    for (auto _ : state) run();
    set_counters(state, g);
    state.SetLabel(pd.impl_info_str());
}
#endif

// The console output, then one line per layer: our fastest algorithm and its time, then
// ours as a fraction of each oneDNN setting's speed (oneDNN's time / ours; the issue's
// target is >= 0.8 on every layer). With repetitions, each time is the best repetition.
class RatioReporter : public benchmark::ConsoleReporter {
public:
    void ReportRuns(const std::vector<Run>& runs) override {
        ConsoleReporter::ReportRuns(runs);
        for (const Run& run : runs) {
            if (run.error_occurred || run.run_type != Run::RT_Iteration) continue;
            // "Conv/<layer>/<algorithm>/real_time"
            const std::string name = run.benchmark_name();
            if (!name.starts_with("Conv/")) continue;  // the pooling benchmarks have no peer here
            const auto first = name.find('/'), second = name.find('/', first + 1);
            const std::string layer = name.substr(first + 1, second - first - 1);
            const std::string algo = name.substr(second + 1, name.find('/', second + 1) - second - 1);
            const double ms = run.GetAdjustedRealTime();  // in the benchmark's unit, ms
            Best& best = algo.starts_with("onednn") ? times_[layer][algo] : times_[layer]["ours"];
            if (best.name.empty() || ms < best.ms) best = {algo, ms};
            if (std::find(order_.begin(), order_.end(), layer) == order_.end()) order_.push_back(layer);
        }
    }
    void Finalize() override {
        ConsoleReporter::Finalize();
        std::printf("\n%-18s %-24s %-22s %s\n", "layer", "ours (fastest, ms)", "x onednn (NCHW)",
                    "x onednn_blocked (its layouts)");
        for (const std::string& layer : order_) {
            auto& t = times_[layer];
            if (t["ours"].name.empty()) continue;
            std::printf("%-18s %-14s %8.3f  %s  %s\n", layer.c_str(), t["ours"].name.c_str(), t["ours"].ms,
                        ratio(t["ours"], t["onednn"]).c_str(), ratio(t["ours"], t["onednn_blocked"]).c_str());
        }
    }

private:
    struct Best {
        std::string name;
        double ms = 0;
    };
    // "0.86x (>= 0.8)": ours as a fraction of the peer's speed.
    static std::string ratio(const Best& ours, const Best& peer) {
        if (peer.name.empty()) return std::string(20, ' ');
        char text[32];
        std::snprintf(text, sizeof text, "%5.2fx %-12s", peer.ms / ours.ms, peer.ms / ours.ms >= 0.8 ? "(>= 0.8)" : "(< 0.8)");
        return text;
    }
    std::map<std::string, std::map<std::string, Best>> times_;  // layer -> "ours" or the oneDNN setting
    std::vector<std::string> order_;
};

// The CNN's max pooling (2x2, stride 2) after each convolution, forward, batch 64: the op
// the CNN's epoch spends most in after the GEMMs (docs/results/2026-12-01-lab11-cnn-profile.md).
void bench_max_pool(benchmark::State& state, gl::Shape shape) {
    gl::Rng rng(1);
    const gl::Tensor x = gl::randn(shape, rng);
    gl::NoGradGuard no_grad;
    for (auto _ : state) benchmark::DoNotOptimize(gl::max_pool2d(x, 2, 2, 0));
    state.counters["bytes/s"] =  // x read once, y (a quarter of x) and its int32 argmax written
        benchmark::Counter(double(x.numel()) * 1.5 * sizeof(float), benchmark::Counter::kIsIterationInvariantRate);
}

// What the CNN runs after each convolution, forward and backward (the gradient routed to
// each window's maximum): the pooling alone (the backward's time is this one's minus the
// forward's), ReLU then the pooling as two ops, and the two fused (relu_max_pool2d).
enum class PoolStep { Pool, ReluThenPool, ReluPoolFused };

void bench_max_pool_step(benchmark::State& state, gl::Shape shape, PoolStep step) {
    gl::Rng rng(1);
    gl::Tensor x = gl::randn(shape, rng).set_requires_grad();
    const gl::Tensor gy = gl::randn({shape[0], shape[1], shape[2] / 2, shape[3] / 2}, rng);
    const auto forward = [&] {
        switch (step) {
            case PoolStep::Pool: return gl::max_pool2d(x, 2, 2, 0);
            case PoolStep::ReluThenPool: return gl::max_pool2d(gl::relu(x), 2, 2, 0);
            case PoolStep::ReluPoolFused: break;
        }
        return gl::relu_max_pool2d(x, 2, 2);
    };
    for (auto _ : state) {
        forward().backward(gy);
        benchmark::DoNotOptimize(x.grad());
        x.set_grad(gl::Tensor());  // the next step assigns, not adds
    }
}

// Registers every (layer, algorithm) pair the algorithm supports, then oneDNN's.
int register_all() {
    if (const char* t = std::getenv("GRADLAB_THREADS")) gl::set_num_threads(std::max(1, std::atoi(t)));
    for (const auto& [name, g] : layers()) {
        for (const auto& a : kc::conv_algorithms()) {
            if (!kc::why_unsupported(a.algo, g).empty()) continue;
            if (a.algo == kc::ConvAlgo::Direct && g.in_channels > 16) continue;  // seconds per run: shown by conv-tune
            benchmark::RegisterBenchmark(("Conv/" + name + "/" + a.name).c_str(), bench_ours, g, a.algo)
                ->Unit(benchmark::kMillisecond)
                ->UseRealTime();
        }
#if GRADLAB_HAVE_ONEDNN
        for (const bool blocked : {false, true}) {
            benchmark::RegisterBenchmark(("Conv/" + name + (blocked ? "/onednn_blocked" : "/onednn")).c_str(),
                                         bench_onednn, g, blocked)
                ->Unit(benchmark::kMillisecond)
                ->UseRealTime();
        }
#endif
    }
    for (const auto& [name, g] : layers()) {
        if (name.rfind("cnn.", 0) != 0) continue;
        for (const kc::ConvAlgo algo : {kc::ConvAlgo::Im2col, kc::ConvAlgo::ImplicitGemm})
            for (const kc::ConvPass pass : {kc::ConvPass::BackwardData, kc::ConvPass::BackwardWeight})
                benchmark::RegisterBenchmark(("ConvBackward/" + name + "/" + kc::conv_algorithm(algo).name + "/" + kc::pass_name(pass)).c_str(),
                                             bench_backward, g, algo, pass)
                    ->Unit(benchmark::kMillisecond)
                    ->UseRealTime();
    }
    for (const auto& [name, shape] : {std::pair<std::string, gl::Shape>{"cnn.pool1", {64, 32, 28, 28}}, {"cnn.pool2", {64, 64, 14, 14}}})
    {
        benchmark::RegisterBenchmark(("Pool/" + name + "/max_pool2d").c_str(), bench_max_pool, shape)
            ->Unit(benchmark::kMillisecond)
            ->UseRealTime();
        for (const auto& [step_name, step] : {std::pair<const char*, PoolStep>{"max_pool2d", PoolStep::Pool},
                                              {"relu_then_max_pool2d", PoolStep::ReluThenPool},
                                              {"relu_max_pool2d", PoolStep::ReluPoolFused}})
            benchmark::RegisterBenchmark(("Pool/" + name + "/" + step_name + "_forward_backward").c_str(), bench_max_pool_step,
                                         shape, step)
                ->Unit(benchmark::kMillisecond)
                ->UseRealTime();
    }
    return 0;
}

const int registered = register_all();

}  // namespace

int main(int argc, char** argv) {
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
    RatioReporter reporter;
    benchmark::RunSpecifiedBenchmarks(&reporter);
    benchmark::Shutdown();
    return 0;
}
