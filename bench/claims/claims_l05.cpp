// Lab 05 claims: number formats and mixed precision (FP-1 .. FP-6).
//
// FP-2, FP-3 and FP-4 share one set of SimpleNet training runs on Fashion-MNIST (fp32,
// fp16 without scaling, fp16 with scaling and master weights, fp16 without master
// weights, bf16), made once per report and remembered. --quick trains 1 epoch instead of
// 5, on the full training set; the verdicts say which.
#include <Eigen/Core>

#include <algorithm>
#include <atomic>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <iomanip>
#include <map>
#include <optional>
#include <random>
#include <sstream>

#include "claims.hpp"
#include "verdicts.hpp"
#include "data/mnist.hpp"
#include "kernels/cpu/elementwise.hpp"
#include "kernels/cpu/elementwise_lowp.hpp"
#include "kernels/gemm.hpp"
#include "kernels/gemm_lowp.hpp"
#include "numerics/convert.hpp"
#include "numerics/formats.hpp"
#include "ops/ops.hpp"
#include "sys/cpu_info.hpp"
#include "tensor/allocator.hpp"
#include "amp/autocast.hpp"
#include "amp/master_weights.hpp"
#include "training/trainer.hpp"

namespace gl::claims {
namespace {

std::string sci(double v, int digits = 2) {
    std::ostringstream os;
    os << std::scientific << std::setprecision(digits) << v;
    return os.str();
}

void log(const Context& ctx, const std::string& line) {
    if (ctx.log) *ctx.log << "   " << line << "\n" << std::flush;
}

// Best-of-n wall time of fn, in seconds.
template <class Fn>
double best_time(int reps, Fn&& fn) {
    double best = 1e30;
    for (int r = 0; r < reps; ++r) {
        const auto t0 = std::chrono::steady_clock::now();
        fn();
        best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    return best;
}

// ---- FP-1 ---------------------------------------------------------------------------------

Result fp1(const Context&) {
    Result r;
    std::ostringstream table;
    for (const auto& f : numerics::format_table()) {
        table << f.name << ": " << f.bits << " bits, eps " << sci(f.epsilon) << ", max " << sci(f.max) << ", min normal "
              << sci(f.min_normal) << ", min subnormal " << sci(f.min_subnormal) << "; ";
        r.data["formats"][f.name] = {{"bits", f.bits},           {"exponent_bits", f.exponent_bits},
                                     {"mantissa_bits", f.mantissa_bits}, {"epsilon", f.epsilon},
                                     {"max", f.max},             {"min_normal", f.min_normal},
                                     {"min_subnormal", f.min_subnormal}, {"lowest", f.lowest}};
    }
    // Every 16-bit pattern: ours vs Eigen, and vs the CPU where it has the instructions.
    std::vector<std::uint16_t> patterns(65536);
    for (std::uint32_t i = 0; i < 65536; ++i) patterns[i] = static_cast<std::uint16_t>(i);
    int half_eigen = 0, bf16_eigen = 0, half_roundtrip = 0, bf16_roundtrip = 0;
    for (std::uint16_t h : patterns) {
        const float f = half_bits_to_float(h);
        const float e = static_cast<float>(Eigen::numext::bit_cast<Eigen::half>(h));
        half_eigen += std::isnan(f) ? std::isnan(e) : std::bit_cast<std::uint32_t>(f) == std::bit_cast<std::uint32_t>(e);
        half_roundtrip += std::isnan(f) ? float_to_half_bits(f) == (h | 0x0200) : float_to_half_bits(f) == h;
        const float b = bfloat16_bits_to_float(h);
        const float eb = static_cast<float>(Eigen::numext::bit_cast<Eigen::bfloat16>(h));
        bf16_eigen += std::isnan(b) ? std::isnan(eb) : std::bit_cast<std::uint32_t>(b) == std::bit_cast<std::uint32_t>(eb);
        bf16_roundtrip += std::isnan(b) ? float_to_bfloat16_bits(b) == (h | 0x0040) : float_to_bfloat16_bits(b) == h;
    }
    std::optional<int> half_f16c;
    if (numerics::available(numerics::ConvertPath::F16C)) {
        std::vector<float> hw(65536), ours(65536);
        std::vector<std::uint16_t> back_hw(65536), back_ours(65536);
        numerics::half_to_float(patterns.data(), hw.data(), 65536, numerics::ConvertPath::F16C);
        numerics::half_to_float(patterns.data(), ours.data(), 65536, numerics::ConvertPath::Portable);
        numerics::float_to_half(ours.data(), back_hw.data(), 65536, numerics::ConvertPath::F16C);
        numerics::float_to_half(ours.data(), back_ours.data(), 65536, numerics::ConvertPath::Portable);
        half_f16c = 0;
        for (std::size_t i = 0; i < 65536; ++i)
            *half_f16c += std::bit_cast<std::uint32_t>(hw[i]) == std::bit_cast<std::uint32_t>(ours[i]) &&
                          back_hw[i] == back_ours[i];
    }
    r.data["patterns"] = {{"half_vs_eigen", half_eigen}, {"half_roundtrip", half_roundtrip},
                          {"bf16_vs_eigen", bf16_eigen}, {"bf16_roundtrip", bf16_roundtrip}};
    if (half_f16c) r.data["patterns"]["half_vs_f16c"] = *half_f16c;
    const auto fp32 = numerics::format_info("FP32"), bf16 = numerics::format_info("BF16"),
               fp16 = numerics::format_info("FP16");
    const bool bf16_keeps_range = bf16.min_normal == fp32.min_normal && bf16.max / fp32.max > 0.99;
    const bool exact = half_eigen == 65536 && bf16_eigen == 65536 && half_roundtrip == 65536 &&
                       bf16_roundtrip == 65536 && half_f16c.value_or(65536) == 65536;
    r.measured = table.str() + "half: " + std::to_string(half_eigen) + "/65536 patterns agree with Eigen::half" +
                 (half_f16c ? ", " + std::to_string(*half_f16c) + "/65536 with F16C (both directions)"
                            : " (no F16C on this CPU)") +
                 "; bfloat16: " + std::to_string(bf16_eigen) + "/65536 agree with Eigen::bfloat16; round trips " +
                 std::to_string(half_roundtrip) + " and " + std::to_string(bf16_roundtrip) +
                 "/65536 (NaNs compared as NaN: Eigen does not keep payloads)";
    const Judgement j = judge_fp1(exact, bf16_keeps_range);
    r.verdict = j.verdict;
    r.why = j.why + " (FP16 stops at " + fixed(fp16.max, 0) + "). AVX512-BF16's vcvtneps2bf16 flushes subnormal inputs to zero, so it agrees with round-to-nearest-even "
            "only on normal inputs (unit test BFloat16.MatchesAvx512Bf16ExceptThatItFlushesSubnormals)";
    return r;
}

// ---- shared training runs (FP-2, FP-3, FP-4) -----------------------------------------------

struct GradientCounts {
    std::int64_t nonzero = 0;           // nonzero FP32 gradient values narrowed to FP16
    std::int64_t zero_scaled = 0;       // ... that became 0 with the loss scale applied
    std::int64_t subnormal_scaled = 0;  // ... that became subnormal with the scale
    std::int64_t zero_unscaled = 0;     // ... that would have become 0 without scaling
    std::int64_t subnormal_unscaled = 0;
};

struct Run {
    std::string name;
    std::vector<double> test_accuracy;  // per epoch
    std::int64_t skipped = 0;
    double final_scale = 1.0;
    std::int64_t updates = 0, vanished = 0;
    GradientCounts grads;
    double seconds = 0.0;
};

struct RunSet {
    int epochs = 0;
    std::map<std::string, Run> runs;
};

bool is_subnormal_half(std::uint16_t h) { return (h & 0x7C00) == 0 && (h & 0x03FF) != 0; }

Run train_one(const Context& ctx, const std::string& name, const std::shared_ptr<const Dataset>& train,
              const Dataset& test, int epochs, DType dtype, bool scaling, bool master, bool watch_gradients) {
    Rng rng(ctx.seed);
    auto net = nn::make_simple_net(rng);
    training::FitOptions opt;
    opt.epochs = epochs;
    opt.seed = ctx.seed;
    opt.precision.dtype = dtype;
    opt.precision.loss_scaling = scaling;
    opt.precision.master_weights = master;
    opt.precision.count_vanished_updates = dtype != DType::Float32;
    Run run;
    run.name = name;
    double scale = opt.precision.scaler.init_scale;
    if (!scaling) scale = 1.0;
    if (watch_gradients) {
        opt.on_step = [&](const training::StepInfo& s) { scale = s.next_loss_scale; };
        set_gradient_cast_observer([&](const Tensor& wide, const Tensor& narrow) {
            if (narrow.dtype() != DType::Float16) return;
            const Tensor w = wide.contiguous();
            const float* wp = w.data<float>();
            const auto* np = static_cast<const std::uint16_t*>(narrow.raw_data());
            GradientCounts& c = run.grads;
            for (std::int64_t i = 0; i < w.numel(); ++i) {
                if (wp[i] == 0.0f || !std::isfinite(wp[i])) continue;
                ++c.nonzero;
                c.zero_scaled += (np[i] & 0x7FFF) == 0;
                c.subnormal_scaled += is_subnormal_half(np[i]);
                const std::uint16_t u = float_to_half_bits(static_cast<float>(wp[i] / scale));
                c.zero_unscaled += (u & 0x7FFF) == 0;
                c.subnormal_unscaled += is_subnormal_half(u);
            }
        });
    }
    training::fit(*net, train, &test, opt, [&](const training::EpochReport& e) {
        run.test_accuracy.push_back(e.test.accuracy);
        run.skipped += e.skipped_steps;
        run.final_scale = e.loss_scale;
        run.updates += e.updates;
        run.vanished += e.vanished_updates;
        run.seconds += e.seconds;
        log(ctx, name + " epoch " + std::to_string(e.epoch) + ": test accuracy " + fixed(e.test.accuracy, 4));
    });
    if (watch_gradients) set_gradient_cast_observer(nullptr);
    return run;
}

const RunSet& training_runs(const Context& ctx) {
    static std::map<std::string, RunSet> cache;
    const std::string key = ctx.data_dir + "|" + std::to_string(ctx.seed) + "|" + (ctx.quick ? "q" : "f");
    if (auto it = cache.find(key); it != cache.end()) return it->second;
    const std::string dir = ctx.data_dir.empty() ? default_fashion_mnist_dir().string() : ctx.data_dir;
    auto train = std::make_shared<MnistDataset>(dir, MnistSplit::Train);
    const MnistDataset test(dir, MnistSplit::Test);
    RunSet set;
    set.epochs = ctx.quick ? 1 : 5;
    const auto add = [&](const std::string& name, DType dtype, bool scaling, bool master, bool watch) {
        set.runs[name] = train_one(ctx, name, train, test, set.epochs, dtype, scaling, master, watch);
    };
    add("fp32", DType::Float32, false, false, false);
    add("fp16", DType::Float16, false, true, false);
    add("fp16+scaling+master", DType::Float16, true, true, true);
    add("fp16+scaling, no master", DType::Float16, true, false, false);
    add("bf16", DType::BFloat16, true, true, false);
    return cache[key] = set;
}

std::string epochs_note(const RunSet& s) {
    return std::to_string(s.epochs) + (s.epochs == 1 ? " epoch (--quick)" : " epochs") +
           " of SimpleNet on all 60,000 Fashion-MNIST training images, Adam lr 1e-3, batch 64, same seed";
}

std::string percent(double num, double den, int digits = 3) {
    return den > 0 ? fixed(100.0 * num / den, digits) + "%" : "n/a";
}

Result fp2(const Context& ctx) {
    Result r;
    const RunSet& s = training_runs(ctx);
    const Run& run = s.runs.at("fp16+scaling+master");
    const GradientCounts& c = run.grads;
    r.data = {{"nonzero", c.nonzero},           {"zero_unscaled", c.zero_unscaled},
              {"subnormal_unscaled", c.subnormal_unscaled}, {"zero_scaled", c.zero_scaled},
              {"subnormal_scaled", c.subnormal_scaled},     {"skipped_steps", run.skipped},
              {"final_scale", run.final_scale}};
    r.measured = "every FP32 activation gradient narrowed to FP16 in the backward of " + epochs_note(s) + " (" +
                 std::to_string(c.nonzero) + " nonzero values): without scaling " + percent(c.zero_unscaled, c.nonzero) +
                 " would become zero and " + percent(c.subnormal_unscaled, c.nonzero) +
                 " subnormal (fewer than 10 significant bits); with the dynamic scaler " + percent(c.zero_scaled, c.nonzero) +
                 " zero and " + percent(c.subnormal_scaled, c.nonzero) + " subnormal; " + std::to_string(run.skipped) +
                 " steps skipped for overflow, final scale " + fixed(run.final_scale, 0);
    const double lost_without = static_cast<double>(c.zero_unscaled + c.subnormal_unscaled);
    const double lost_with = static_cast<double>(c.zero_scaled + c.subnormal_scaled);
    const Judgement j = judge_fp2(c.zero_unscaled, lost_without, lost_with, static_cast<double>(c.nonzero));
    r.verdict = j.verdict;
    r.why = j.why;
    return r;
}

Result fp3(const Context& ctx) {
    Result r;
    const RunSet& s = training_runs(ctx);
    const Run& fp16w = s.runs.at("fp16+scaling, no master");
    const Run& master = s.runs.at("fp16+scaling+master");
    const double f16 = fp16w.updates ? static_cast<double>(fp16w.vanished) / fp16w.updates : 0.0;
    const double f32 = master.updates ? static_cast<double>(master.vanished) / master.updates : 0.0;
    r.data = {{"fp16_weights", {{"updates", fp16w.updates}, {"vanished", fp16w.vanished},
                                {"test_accuracy", fp16w.test_accuracy.back()}}},
              {"fp32_master", {{"updates", master.updates}, {"vanished", master.vanished},
                               {"test_accuracy", master.test_accuracy.back()}}}};
    r.measured = epochs_note(s) + ": of the weight elements with a nonzero gradient, " + percent(fp16w.vanished, fp16w.updates) +
                 " of updates vanished (weight unchanged) with weights kept in FP16, " +
                 percent(master.vanished, master.updates) + " with FP32 master weights; test accuracy " +
                 fixed(fp16w.test_accuracy.back(), 4) + " vs " + fixed(master.test_accuracy.back(), 4);
    const Judgement j = judge_fp3(f16, f32);
    r.verdict = j.verdict;
    r.why = j.why;
    return r;
}

Result fp4(const Context& ctx) {
    Result r;
    const RunSet& s = training_runs(ctx);
    const double base = s.runs.at("fp32").test_accuracy.back();
    std::string list;
    for (const char* name : {"fp32", "fp16", "fp16+scaling+master", "bf16", "fp16+scaling, no master"}) {
        const Run& run = s.runs.at(name);
        list += (list.empty() ? "" : "; ") + std::string(name) + " " + fixed(run.test_accuracy.back(), 4) + " (" +
                fixed(run.seconds, 1) + " s)";
        r.data[name] = {{"test_accuracy", run.test_accuracy}, {"skipped_steps", run.skipped}, {"seconds", run.seconds}};
    }
    const double mixed = s.runs.at("fp16+scaling+master").test_accuracy.back();
    const double bf16 = s.runs.at("bf16").test_accuracy.back();
    const double plain16 = s.runs.at("fp16").test_accuracy.back();
    r.measured = epochs_note(s) + ", final test accuracy: " + list + ". fp16 = no loss scaling (master weights on); "
                 "bf16 = scaling + master weights";
    const Judgement j = judge_fp4(base, mixed, bf16, plain16);
    r.verdict = j.verdict;
    r.why = j.why +
            (plain16 < base - 0.01 ? " (it fell behind by more than a point)"
                                   : " (less than a point behind here, although FP-2 shows how many of its gradient "
                                     "values underflow: Adam's per-weight normalisation hides much of the loss)");
    return r;
}

// ---- FP-5 ----------------------------------------------------------------------------------

Result fp5(const Context& ctx) {
    Result r;
    std::mt19937 gen(static_cast<std::uint32_t>(ctx.seed) + 5);
    std::uniform_real_distribution<float> dist(0.0f, 1.0f);
    std::string list;
    double err16_last = 0, err32_last = 0, err16_first = 0;
    for (std::int64_t K = 64; K <= 65536; K *= 4) {
        const int trials = 8;
        double e16 = 0, e32 = 0;
        for (int t = 0; t < trials; ++t) {
            // FP16 inputs (as a tensor core reads them), products exact in FP32.
            float acc32 = 0.0f;
            std::uint16_t acc16 = 0;
            double ref = 0.0;
            for (std::int64_t k = 0; k < K; ++k) {
                const float a = half_bits_to_float(float_to_half_bits(dist(gen)));
                const float b = half_bits_to_float(float_to_half_bits(dist(gen)));
                const float p = a * b;
                ref += static_cast<double>(a) * b;
                acc32 += p;
                acc16 = float_to_half_bits(half_bits_to_float(acc16) + p);  // round after every add
            }
            e16 += std::abs(half_bits_to_float(acc16) - ref) / ref / trials;
            e32 += std::abs(acc32 - ref) / ref / trials;
        }
        if (K == 64) err16_first = e16;
        err16_last = e16;
        err32_last = e32;
        r.data["K"].push_back({{"K", K}, {"fp16_accumulation", e16}, {"fp32_accumulation", e32}});
        list += (list.empty() ? "" : "; ") + std::string("K=") + std::to_string(K) + ": " + sci(e16) + " vs " + sci(e32);
    }
    r.measured = "mean relative error of dot products of FP16 inputs in [0, 1) (8 trials each), accumulated in FP16 vs "
                 "FP32, against float64: " + list;
    const Judgement j = judge_fp5(err16_first, err16_last, err32_last);
    r.verdict = j.verdict;
    r.why = j.why + " (once the sum passes 2048 an FP16 ulp is 2 and products below 1 stop counting)";
    return r;
}

// ---- FP-6 ----------------------------------------------------------------------------------

// Counts live and peak bytes of every tensor allocated while it is the default.
class CountingAllocator final : public Allocator {
public:
    void* allocate(std::size_t bytes) override {
        void* p = cpu_allocator().allocate(bytes);
        const auto now = live_ += static_cast<std::int64_t>(bytes);
        std::int64_t peak = peak_.load();
        while (now > peak && !peak_.compare_exchange_weak(peak, now)) {
        }
        return p;
    }
    void deallocate(void* ptr, std::size_t bytes) override {
        live_ -= static_cast<std::int64_t>(bytes);
        cpu_allocator().deallocate(ptr, bytes);
    }
    const char* name() const override { return "counting"; }
    void reset_peak() { peak_ = live_.load(); }
    std::int64_t live() const { return live_; }
    std::int64_t peak() const { return peak_; }

private:
    std::atomic<std::int64_t> live_{0}, peak_{0};
};

// Bytes of the model state and the peak of one training step, measured.
nlohmann::json measure_step_memory(DType dtype, const Context& ctx) {
    CountingAllocator counter;
    set_default_cpu_allocator(&counter);
    nlohmann::json j;
    try {
        Rng data_rng(1);
        const Tensor x = rand_uniform({64, 784}, 0, 1, data_rng);
        std::vector<std::int32_t> labels(64);
        for (std::size_t i = 0; i < labels.size(); ++i) labels[i] = static_cast<std::int32_t>(i % 10);
        const Tensor y = from_vector<std::int32_t>(labels, {64});
        const std::int64_t before_state = counter.live();
        Rng rng(ctx.seed);
        auto net = nn::make_simple_net(rng);
        std::unique_ptr<amp::MasterWeights> master;
        std::unique_ptr<optim::Optimizer> opt;
        if (dtype == DType::Float32) {
            opt = training::make_optimizer("adam", net->parameters(), 1e-3);
        } else {
            master = std::make_unique<amp::MasterWeights>(net->parameters(), dtype);
            opt = training::make_optimizer("adam", master->masters(), 1e-3);
        }
        const std::int64_t state = counter.live() - before_state;
        const amp::DynamicLossScaler scaler;
        counter.reset_peak();
        const std::int64_t base = counter.live();
        {
            const amp::AutocastGuard autocast(dtype == DType::Float32 ? std::nullopt : std::optional<DType>(dtype));
            const Tensor loss = cross_entropy((*net)(x), y);
            scaler.scale(loss).backward();
        }
        if (master) master->step(*opt, scaler); else opt->step();
        j = {{"model_and_optimizer_state_bytes", state}, {"step_peak_bytes", counter.peak() - base}};
        // The peak counts what one step adds on top of the state: activations saved for
        // backward, gradients (16-bit working gradients and their FP32 widened copies).
    } catch (...) {
        set_default_cpu_allocator(nullptr);
        throw;
    }
    set_default_cpu_allocator(nullptr);
    return j;
}

double gemm_gflops(std::int64_t n, double seconds) { return 2.0 * n * n * n / seconds / 1e9; }

Result fp6(const Context& ctx) {
    Result r;
    std::ostringstream m;
    // Memory: exact accounting from the parameter count, and the bytes one step allocates.
    const std::int64_t params = 784 * 128 + 128 + 128 * 10 + 10;
    m << "memory (SimpleNet, " << params << " parameters, Adam): weights for the forward " << params * 4 << " B in FP32 vs "
      << params * 2 << " B as FP16 working copies (+" << params * 4 << " B FP32 masters, +" << params * 8
      << " B Adam state either way); ";
    for (DType d : {DType::Float32, DType::Float16, DType::BFloat16}) {
        const nlohmann::json j = measure_step_memory(d, ctx);
        r.data["memory"][name_of(d)] = j;
        m << name_of(d) << " measured weights+masters+Adam state " << j["model_and_optimizer_state_bytes"].get<std::int64_t>() << " B, a step's peak on top "
          << j["step_peak_bytes"].get<std::int64_t>() << " B; ";
    }
    // Element-wise beyond the caches: 32 M elements (128 MiB per FP32 array, 64 MiB per
    // 16-bit one; the L3 here is far smaller). Repetitions interleave the kernels so that
    // other load on the machine hits them alike; the best time of each is kept.
    const std::size_t n = std::size_t{1} << 25;
    std::vector<float> x32(n, 0.5f), y32(n, 0.25f);
    std::vector<std::uint16_t> x16(n), y16(n), xb(n), yb(n);
    numerics::float_to_half(x32.data(), x16.data(), n);
    numerics::float_to_half(y32.data(), y16.data(), n);
    numerics::float_to_bfloat16(x32.data(), xb.data(), n);
    numerics::float_to_bfloat16(y32.data(), yb.data(), n);
    double t32 = 1e30, t16 = 1e30, tb = 1e30, r32 = 1e30, r16 = 1e30;
    for (int rep = 0; rep < (ctx.quick ? 5 : 11); ++rep) {
        t32 = std::min(t32, best_time(1, [&] { kernels::axpy(1e-3f, x32.data(), y32.data(), static_cast<std::int64_t>(n)); }));
        t16 = std::min(t16, best_time(1, [&] { kernels::axpy_f16(n, 1e-3f, x16.data(), y16.data()); }));
        tb = std::min(tb, best_time(1, [&] { kernels::axpy_bf16(n, 1e-3f, xb.data(), yb.data()); }));
        r32 = std::min(r32, best_time(1, [&] { kernels::relu(x32.data(), y32.data(), static_cast<std::int64_t>(n)); }));
        r16 = std::min(r16, best_time(1, [&] { kernels::relu_f16(n, x16.data(), y16.data()); }));
    }
    const double axpy_speedup = t32 / t16, relu_speedup = r32 / r16;
    r.data["elementwise"] = {{"n", n},          {"axpy_f32_s", t32},     {"axpy_f16_s", t16}, {"axpy_bf16_s", tb},
                             {"relu_f32_s", r32}, {"relu_f16_s", r16},   {"avx512", kernels::elementwise_lowp_uses_avx512()}};
    m << "axpy on 32 M elements: FP32 " << fixed(3 * 4.0 * n / t32 / 1e9, 1) << " GB/s, FP16 storage "
      << fixed(axpy_speedup, 2) << "x faster, BF16 " << fixed(t32 / tb, 2) << "x; relu FP16 " << fixed(relu_speedup, 2)
      << "x; ";
    // GEMM: the best FP32 kernel against each low-precision one, same run.
    std::map<std::int64_t, double> best32, best16;
    std::map<std::int64_t, std::string> best32_name, best16_name;
    for (std::int64_t N : {std::int64_t{1024}, std::int64_t{2048}}) {
        Rng rng(2);
        const Tensor a = rand_uniform({N, N}, -1, 1, rng), b = rand_uniform({N, N}, -1, 1, rng);
        Tensor c = empty({N, N});
        kernels::GemmArgs<float> g;
        g.M = g.N = g.K = N;
        g.A = a.data<float>();
        g.B = b.data<float>();
        g.C = c.data<float>();
        g.lda = g.ldb = g.ldc = N;
        const int gemm_reps = N >= 2048 ? 2 : 3;
        for (const auto& k : kernels::gemm_kernels()) {
            // CPU kernels only (the CUDA ones run on a GPU or, slowly, on the CPU runtime), and
            // not the teaching versions that take minutes at N = 2048.
            if (k.name.rfind("cuda", 0) == 0 || k.name == "naive" || k.name == "reordered" || k.name == "blocked" ||
                !kernels::why_unavailable(k).empty())
                continue;
            const double gf = gemm_gflops(N, best_time(gemm_reps, [&] { k.sgemm(g); }));
            r.data["gemm"][std::to_string(N)]["fp32:" + k.name] = gf;
            if (gf > best32[N]) best32[N] = gf, best32_name[N] = k.name;
        }
        for (DType d : {DType::Float16, DType::BFloat16}) {
            const Tensor a16 = to_dtype(a, d), b16 = to_dtype(b, d);
            kernels::LowpGemmArgs lg;
            lg.dtype = d;
            lg.M = lg.N = lg.K = N;
            lg.A = static_cast<const std::uint16_t*>(a16.raw_data());
            lg.B = static_cast<const std::uint16_t*>(b16.raw_data());
            lg.C = c.data<float>();
            lg.lda = lg.ldb = lg.ldc = N;
            for (const auto& k : kernels::lowp_gemm_kernels()) {
                if (!k.supports(d) || !k.available() || k.name == "lowp_naive") continue;
                const double gf = gemm_gflops(N, best_time(gemm_reps, [&] { k.fn(lg); }));
                const std::string key = name_of(d) + ":" + k.name;
                r.data["gemm"][std::to_string(N)][key] = gf;
                if (gf > best16[N]) best16[N] = gf, best16_name[N] = key;
            }
        }
        m << "GEMM N=" << N << ": best FP32 " << best32_name[N] << " " << fixed(best32[N], 1) << " GFLOP/s, best 16-bit "
          << best16_name[N] << " " << fixed(best16[N], 1) << " GFLOP/s (" << fixed(best16[N] / best32[N], 2) << "x); ";
        log(ctx, "GEMM N=" + std::to_string(N) + " done");
    }
    std::string missing;
    for (const auto& k : kernels::lowp_gemm_kernels())
        if (!k.available()) missing += (missing.empty() ? "" : ", ") + k.name + " (needs " + k.needs + ")";
    m << "not run here: " << (missing.empty() ? "none" : missing)
      << "; the GPU tensor-core GEMM (WMMA vs cublasGemmEx) is timed only by tools/gpu/run_gpu_checks.sh on a GPU";
    r.measured = m.str();
    Fp6Measured measured;
    measured.axpy_speedup = axpy_speedup;
    measured.relu_speedup = relu_speedup;
    measured.gemm_ratio = std::min(best16[1024] / best32[1024], best16[2048] / best32[2048]);
    measured.best32 = best32_name[2048];
    measured.best16 = best16_name[2048];
    measured.gemm_ceiling = lowp_gemm_ceiling(best16_name[2048]);
    const Judgement j = judge_fp6(measured);
    r.verdict = j.verdict;
    r.why = "a 16-bit tensor takes exactly half the bytes, but mixed-precision training adds FP32 masters to the "
            "16-bit working weights, so for a model whose memory is mostly weights and Adam state (SimpleNet) the "
            "total grows; only activations and gradients halve. " + j.why +
            (j.verdict == Verdict::NotReproduced && measured.gemm_ratio < 2.0
                 ? ". vdpbf16ps does two bf16 products per FP32 lane per instruction, so against an AVX-512 FP32 "
                   "kernel its ceiling is 2x, less the packing and the FP32 stores"
                 : "") +
            (missing.empty() ? "" : "; " + missing + " could not run (the paths that could pass 2x on a CPU)");
    return r;
}

}  // namespace

std::vector<Claim> lab05_claims() {
    return {
        {"FP-1", "05",
         "FP64/FP32/FP16/BF16/INT8 differ in bits, precision and range; BF16 keeps FP32's range; conversions round to "
         "nearest even and agree with hardware (F16C) and Eigen on all 65,536 values",
         fp1},
        {"FP-2", "05",
         "in FP16 small gradients underflow to zero; loss scaling (GradScaler) prevents it", fp2},
        {"FP-3", "05", "FP32 master weights are needed: updates smaller than half an FP16 ulp of the weight vanish", fp3},
        {"FP-4", "05",
         "mixed precision reaches FP32 accuracy (within 1 point on Fashion-MNIST); FP16 without scaling can fall behind",
         fp4},
        {"FP-5", "05", "tensor cores multiply in FP16 and accumulate in FP32: FP16 accumulation loses accuracy as K grows",
         fp5},
        {"FP-6", "05", "FP16 halves memory and gives about 2x speed", fp6, true},
    };
}

}  // namespace gl::claims
