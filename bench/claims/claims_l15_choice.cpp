// Lab 15 claim CHOICE-1 (CPU for small models, GPU for large ones: find the crossover): a
// training step of an MLP (Linear(w, w) - ReLU - Linear(w, 10), input width w) on batches
// of 32 and 256, for growing w. The CPU step is timed. The GPU step is timed on the GPU
// when there is one; without one it comes from a model of an H200 (verdicts_l15_choice.hpp)
// fed with what the step does, counted on the CPU runtime's device (cuda_cpu), which runs
// the GPU's kernels: its kernel launches and the bytes it copies to the device.
#include <chrono>
#include <memory>
#include <sstream>

#include "claims.hpp"
#include "cuda_cpu/cpu_runtime.hpp"
#include "device/device.hpp"
#include "nn/module.hpp"
#include "ops/ops.hpp"
#include "optim/optimizer.hpp"
#include "verdicts_l15_choice.hpp"

namespace gl::claims {
namespace {

constexpr std::int64_t kClasses = 10;

/// A batch of @p batch inputs of @p width features on the host, and its targets.
struct HostBatch {
    Tensor x, y;
};

HostBatch make_batch(std::int64_t batch, std::int64_t width, Rng& rng) {
    HostBatch b{randn({batch, width}, rng), empty({batch}, DType::Int32)};
    for (std::int64_t i = 0; i < batch; ++i) b.y.data<std::int32_t>()[i] = static_cast<std::int32_t>(i % kClasses);
    return b;
}

/// The step's multiply-adds times 2: forward, input gradient and weight gradient of both
/// layers (3 GEMMs each; the first layer's input gradient is not needed, counted anyway).
double step_flops(std::int64_t batch, std::int64_t width) {
    const double macs_forward = static_cast<double>(batch) * width * (width + kClasses);
    return 2.0 * 3.0 * macs_forward;
}

/// The MLP of one width, its optimizer and a batch, the model and optimizer on a device.
struct MlpOnDevice {
    MlpOnDevice(std::int64_t batch, std::int64_t width, Device device, std::uint64_t seed)
        : rng(seed), net(nn::make_simple_net(rng, width, width, kClasses)), d(device) {
        net->to(d);  // before the optimizer: its state is made where the parameters are
        opt = std::make_unique<optim::SGD>(net->parameters(), 0.01, 0.9);
        b = make_batch(batch, width, rng);
    }

    /// One training step as `train --device` runs it: the batch copied once, no read back;
    /// the device synchronised at the end so that queued GPU work is inside the time.
    double timed_step() {
        const auto start = std::chrono::steady_clock::now();
        const Tensor x = b.x.to(d), y = b.y.to(d);
        opt->zero_grad();
        cross_entropy((*net)(x), y).backward();
        opt->step();
        device::synchronize(d);
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    }

    Rng rng;
    std::shared_ptr<nn::Sequential> net;
    std::unique_ptr<optim::SGD> opt;
    HostBatch b;
    Device d;
};

/// The median step time of the MLP of @p width on @p d, over @p reps steps after a warm-up.
double median_step(std::int64_t batch, std::int64_t width, Device d, int reps, std::uint64_t seed) {
    MlpOnDevice mlp(batch, width, d, seed);
    (void)mlp.timed_step();  // warm-up: first touch, the allocator's caches
    std::vector<double> seconds;
    for (int i = 0; i < reps; ++i) seconds.push_back(mlp.timed_step());
    return median(seconds);
}

/// The kernels one step launches on the CPU runtime's device (the GPU's kernels).
double kernels_per_step(std::int64_t batch, std::int64_t width, std::uint64_t seed) {
    MlpOnDevice mlp(batch, width, kCudaCpu, seed);
    (void)mlp.timed_step();  // the optimizer's first step may differ (its state is made)
    cuda::cpu::reset_runtime_stats();
    (void)mlp.timed_step();
    return static_cast<double>(cuda::cpu::runtime_stats().launches);
}

/// The bytes the step's batch copy moves to the device, counted by the device layer.
double batch_bytes_to_device(std::int64_t batch, std::int64_t width, std::uint64_t seed) {
    Rng rng(seed);
    const HostBatch b = make_batch(batch, width, rng);
    const device::TransferStats before = device::transfer_stats();
    const Tensor x = b.x.to(kCudaCpu), y = b.y.to(kCudaCpu);
    return static_cast<double>(device::transfer_stats().host_to_device_bytes - before.host_to_device_bytes);
}

/// The GPU when there is one (its name in @p name), else nothing and why in @p name.
std::optional<Device> present_gpu(std::string& name) {
    try {
        const Device gpu{DeviceKind::CUDA, 0};
        device::check_available(gpu);
        name = gpu.str();
        return gpu;
    } catch (const Error& e) {
        name = std::string("no GPU here (") + e.what() + ")";
        return std::nullopt;
    }
}

Result choice1(const Context& ctx) {
    Result r;
    const std::vector<std::int64_t> widths =
        ctx.quick ? std::vector<std::int64_t>{16, 64, 256, 1024} : std::vector<std::int64_t>{16, 32, 64, 128, 256, 512, 1024, 2048};
    const std::vector<std::int64_t> batches = {32, 256};
    const int reps = ctx.quick ? 3 : 7;
    std::string why_no_gpu;
    const std::optional<Device> gpu = present_gpu(why_no_gpu);
    const GpuModel model = h200_model();

    Choice1Measured m;
    std::vector<double> kernel_counts;
    m.gpu_measured = gpu.has_value();
    m.gpu = gpu ? why_no_gpu : model.name + "; " + why_no_gpu;
    for (const std::int64_t batch : batches) {
        // The op graph does not depend on the width: the same kernels at any two widths.
        const double kernels = kernels_per_step(batch, widths[0], ctx.seed);
        if (kernels != kernels_per_step(batch, widths[1], ctx.seed))
            throw Error("CHOICE-1: the step launched a different number of kernels at widths " +
                        std::to_string(widths[0]) + " and " + std::to_string(widths[1]) + "; the model assumes the same");
        kernel_counts.push_back(kernels);
        for (const std::int64_t width : widths) {
            ChoicePoint p{width, batch, median_step(batch, width, kCpu, reps, ctx.seed), 0.0};
            const StepCounts counts{kernels, batch_bytes_to_device(batch, width, ctx.seed), step_flops(batch, width)};
            p.gpu_seconds = gpu ? median_step(batch, width, *gpu, reps, ctx.seed) : modeled_gpu_seconds(model, counts);
            m.points.push_back(p);
            r.data["points"].push_back({{"batch", batch}, {"width", width}, {"cpu_seconds", p.cpu_seconds},
                                        {"gpu_seconds", p.gpu_seconds}, {"kernels", counts.kernels},
                                        {"bytes_to_device", counts.bytes_to_device}, {"flops", counts.flops}});
            if (ctx.log)
                *ctx.log << "  CHOICE-1 batch " << batch << " width " << width << ": CPU " << fixed(p.cpu_seconds * 1e3, 3)
                         << " ms, GPU " << fixed(p.gpu_seconds * 1e3, 3) << (gpu ? " ms\n" : " ms (model)\n");
        }
    }
    r.data["gpu_measured"] = m.gpu_measured;
    r.data["gpu"] = m.gpu;
    if (!gpu) r.data["model"] = {{"launch_us", model.launch_us}, {"sync_us", model.sync_us}, {"link_gbs", model.link_gbs},
                                 {"fp32_tflops", model.fp32_tflops}, {"source", model.source}};
    std::ostringstream text;
    text << "MLP Linear(w, w)-ReLU-Linear(w, 10), one SGD step, median of " << reps << ", widths " << widths.front()
         << ".." << widths.back() << ", batches 32 and 256 (" << fixed(kernel_counts[0], 0) << " and "
         << fixed(kernel_counts[1], 0) << " kernel launches per step, counted on cuda_cpu); CPU measured, GPU "
         << (gpu ? "measured on " + m.gpu : "modelled (" + model.source + ")");
    r.measured = text.str();
    const Judgement j = judge_choice1(m);
    r.verdict = j.verdict;
    r.why = j.why;
    return r;
}

}  // namespace

std::vector<Claim> lab15_choice_claims() {
    return {{"CHOICE-1", "15", "CPU is fine for small models and data, GPU wins for large ones: there is a crossover size",
             choice1, true}};
}

}  // namespace gl::claims
