// Lab 15 claim DEV-1 (keep the model and the data on one device): SimpleNet's training step
// on a device three ways, counted by the device layer (device::transfer_stats) and timed,
// steps interleaved across the ways, median per way:
//   once             the batch copied to the device once per step, from pinned staging on
//                    a copy stream (device::BatchUploader), nothing read back (what
//                    `gradlab train --device D` does);
//   item_every_step  the same, and the loss read every step (`.item()`: a host sync);
//   batch_per_op     the batch left on the host and copied again by every op that reads it
//                    (the forward reads the inputs, the loss and the accuracy the targets).
// The device is the GPU when there is one, else cuda_cpu (the CPU runtime).
#include <chrono>
#include <sstream>

#include "claims.hpp"
#include "device/batch_upload.hpp"
#include "device/device.hpp"
#include "device/device_ops.hpp"
#include "nn/module.hpp"
#include "ops/ops.hpp"
#include "optim/optimizer.hpp"
#include "verdicts_l15_dev.hpp"

namespace gl::claims {
namespace {

enum class Way { once, item_every_step, batch_per_op };

/// One training step in way @p way; returns its wall seconds (the device synchronised at
/// the end, outside the counts, so queued work is inside the time on a GPU too).
double device_step(Way way, nn::Module& net, optim::Optimizer& opt, const Tensor& x, const Tensor& y, Device d,
                   device::BatchUploader& uploader) {
    const auto start = std::chrono::steady_clock::now();
    const bool per_op = way == Way::batch_per_op;
    Batch on_device;
    if (!per_op) {
        uploader.start({x, y});
        on_device = uploader.take();  // the device waits for the copy, the host does not
    }
    const Tensor dx = on_device.inputs, dy = on_device.targets;
    opt.zero_grad();
    const Tensor logits = net(per_op ? x.to(d) : dx);
    const Tensor loss = cross_entropy(logits, per_op ? y.to(d) : dy);
    loss.backward();
    opt.step();
    const Tensor correct = device::count_equal(argmax(logits), per_op ? y.to(d) : dy);
    (void)correct;  // summed on the device, as the trainer does; never read here
    if (way == Way::item_every_step) (void)loss.item();
    device::synchronize(d);  // the timer's own sync: taken back out of the counts by the caller
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

Result dev1(const Context& ctx) {
    Result r;
    const bool gpu = [] {
        try {
            device::check_available({DeviceKind::CUDA, 0});
            return true;
        } catch (const Error&) {
            return false;
        }
    }();
    const Device d = gpu ? Device{DeviceKind::CUDA, 0} : kCudaCpu;
    Rng rng(ctx.seed);
    auto net = nn::make_simple_net(rng);
    net->to(d);
    optim::SGD opt(net->parameters(), 0.01, 0.9);
    const std::int64_t batch = 64;
    const Tensor x = randn({batch, 784}, rng);
    Tensor y = empty({batch}, DType::Int32);
    for (std::int64_t i = 0; i < batch; ++i) y.data<std::int32_t>()[i] = static_cast<std::int32_t>(i % 10);

    const int reps = ctx.quick ? 5 : (gpu ? 200 : 15);
    const Way ways[] = {Way::once, Way::item_every_step, Way::batch_per_op};
    device::BatchUploader uploader(d);
    std::vector<double> seconds[3];
    device::TransferStats totals[3];
    for (int rep = -1; rep < reps; ++rep)  // rep -1 warms up (first-touch, caches)
        for (int w = 0; w < 3; ++w) {
            const device::TransferStats before = device::transfer_stats();
            const double s = device_step(ways[w], *net, opt, x, y, d, uploader);
            const device::TransferStats after = device::transfer_stats();
            if (rep < 0) continue;
            seconds[w].push_back(s);
            totals[w].host_syncs += after.host_syncs - before.host_syncs - 1;  // less the timer's sync
            totals[w].host_to_device += after.host_to_device - before.host_to_device;
        }
    Dev1Measured m;
    m.on_gpu = gpu;
    DeviceStepReading* readings[] = {&m.once, &m.item_every_step, &m.batch_per_op};
    const char* names[] = {"once", "item_every_step", "batch_per_op"};
    std::ostringstream text;
    text << "SimpleNet, batch " << batch << ", on " << d.str() << ", median of " << reps << " interleaved steps: ";
    for (int w = 0; w < 3; ++w) {
        readings[w]->host_syncs_per_step = static_cast<double>(totals[w].host_syncs) / reps;
        readings[w]->copies_to_device_per_step = static_cast<double>(totals[w].host_to_device) / reps;
        readings[w]->seconds_per_step = median(seconds[w]);
        r.data[names[w]] = {{"host_syncs_per_step", readings[w]->host_syncs_per_step},
                            {"copies_to_device_per_step", readings[w]->copies_to_device_per_step},
                            {"seconds_per_step", readings[w]->seconds_per_step}};
        text << (w ? "; " : "") << names[w] << " " << fixed(readings[w]->seconds_per_step * 1e3, 2) << " ms, "
             << fixed(readings[w]->host_syncs_per_step, 2) << " syncs, "
             << fixed(readings[w]->copies_to_device_per_step, 2) << " copies";
    }
    r.data["device"] = d.str();
    r.measured = text.str();
    const Judgement j = judge_dev1(m);
    r.verdict = j.verdict;
    r.why = j.why;
    return r;
}

}  // namespace

std::vector<Claim> lab15_device_claims() {
    return {{"DEV-1", "15",
             "keep the model and the data on one device: each host<->device copy and each sync in a step costs time",
             dev1, true}};
}

}  // namespace gl::claims
