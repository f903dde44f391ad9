// The convolution family against oneDNN's convolution (the CPU peer), forward pass, on
// the layer shapes of `train --model cnn` and `--model resnet`, in one run:
//
//   build/bench/bench_conv --benchmark_filter=. [--threads via GRADLAB_THREADS]
//
// Each benchmark is one (layer, algorithm); the counter GFLOP/s counts 2 N K P Q (C/g) R S
// flops (the definition's, whatever the algorithm really does). oneDNN gets the same
// NCHW float32 buffers; its weights are reordered once, outside the timing (a framework
// keeps them in oneDNN's layout). Before timing, each algorithm's output is compared with
// direct's (and oneDNN's with ours), so a wrong result cannot look fast.
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "kernels/cpu/conv/conv.hpp"
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

#if GRADLAB_HAVE_ONEDNN
// Debian's oneDNN runs on OpenMP threads: give it as many as ours.
void sync_onednn_threads() {
    using SetFn = void (*)(int);
    static const SetFn set = reinterpret_cast<SetFn>(dlsym(RTLD_DEFAULT, "omp_set_num_threads"));
    if (set) set(gl::get_num_threads());
}

void bench_onednn(benchmark::State& state, kc::ConvGeometry g) {
    using namespace dnnl;
    using tag = memory::format_tag;
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
    const memory::desc src_md(src, memory::data_type::f32, tag::nchw), dst_md(dst, memory::data_type::f32, tag::nchw);
    const memory::desc wei_any(wei, memory::data_type::f32, tag::any);
    const convolution_forward::desc desc(prop_kind::forward_inference, algorithm::convolution_direct, src_md, wei_any,
                                         dst_md, strides, dilates, pad_l, pad_r);
    const convolution_forward::primitive_desc pd(desc, eng);
    memory src_mem(src_md, eng, const_cast<float*>(p.x.data())), dst_mem(dst_md, eng, y.data());
    memory user_wei(memory::desc(wei, memory::data_type::f32, tag::oihw), eng, const_cast<float*>(p.w.data()));
    memory wei_mem(pd.weights_desc(), eng);
    reorder(user_wei, wei_mem).execute(s, user_wei, wei_mem);  // once: the weights' layout is oneDNN's choice
    const convolution_forward conv(pd);
    const auto run = [&] {
        conv.execute(s, {{DNNL_ARG_SRC, src_mem}, {DNNL_ARG_WEIGHTS, wei_mem}, {DNNL_ARG_DST, dst_mem}});
        s.wait();
    };
    run();
    if (const double d = gl::testkit::max_relative_error(y, p.reference); d > 1e-4) {
        state.SkipWithError(("oneDNN differs from direct by " + std::to_string(d)).c_str());
        return;
    }
    for (auto _ : state) run();
    set_counters(state, g);
    state.SetLabel(pd.impl_info_str());
}
#endif

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
        benchmark::RegisterBenchmark(("Conv/" + name + "/onednn").c_str(), bench_onednn, g)
            ->Unit(benchmark::kMillisecond)
            ->UseRealTime();
#endif
    }
    return 0;
}

const int registered = register_all();

}  // namespace

BENCHMARK_MAIN();
