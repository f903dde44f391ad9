// Model and pipeline parallelism: see pipeline.hpp.
#include "dist/pipeline.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <thread>

#include "dist/collectives.hpp"
#include "dist/tensor_parallel.hpp"
#include "ops/ops.hpp"

namespace gl::dist {

std::string to_string(PipeSchedule s) { return s == PipeSchedule::GPipe ? "gpipe" : "1f1b"; }

PipeSchedule parse_pipe_schedule(const std::string& name) {
    if (name == "gpipe") return PipeSchedule::GPipe;
    if (name == "1f1b") return PipeSchedule::OneFOneB;
    throw Error("unknown pipeline schedule '" + name + "'; use gpipe or 1f1b");
}

namespace {

void check_shape(int stages, int micro_batches, int stage) {
    check(stages >= 1 && micro_batches >= 1 && stage >= 0 && stage < stages,
          "pipeline schedule: need stages >= 1, micro_batches >= 1 and 0 <= stage < stages (got " +
              std::to_string(stages) + ", " + std::to_string(micro_batches) + ", " + std::to_string(stage) + ")");
}

}  // namespace

std::vector<PipeStep> gpipe_order(int stages, int micro_batches, int stage) {
    check_shape(stages, micro_batches, stage);
    std::vector<PipeStep> order;
    for (int i = 0; i < micro_batches; ++i) order.push_back({'F', i});
    for (int i = 0; i < micro_batches; ++i) order.push_back({'B', i});
    return order;
}

std::vector<PipeStep> one_f_one_b_order(int stages, int micro_batches, int stage) {
    check_shape(stages, micro_batches, stage);
    // LAB 09 BEGIN: 1F1B: warm-up forwards, one forward one backward, drain
    // Stage s first runs forwards until the micro-batch it sends on can come back: p-1-s
    // of them (never more than m). Then, while forwards remain, it alternates one forward
    // and one backward (the oldest micro-batch in flight). Then it runs the remaining
    // backwards. Micro-batches go forward in order 0..m-1 and backward in order 0..m-1.
    const int warmup = std::min(stages - 1 - stage, micro_batches);
    std::vector<PipeStep> order;
    int next_forward = 0, next_backward = 0;
    while (next_forward < warmup) order.push_back({'F', next_forward++});
    while (next_forward < micro_batches) {
        order.push_back({'F', next_forward++});
        order.push_back({'B', next_backward++});
    }
    while (next_backward < micro_batches) order.push_back({'B', next_backward++});
    return order;
    // LAB 09 END
}

std::vector<PipeStep> schedule_order(PipeSchedule schedule, int stages, int micro_batches, int stage) {
    return schedule == PipeSchedule::GPipe ? gpipe_order(stages, micro_batches, stage)
                                           : one_f_one_b_order(stages, micro_batches, stage);
}

void check_pipe_order(const std::vector<PipeStep>& order, int micro_batches) {
    int forwards = 0, backwards = 0;
    for (const PipeStep& s : order) {
        const std::string where = std::string(1, s.op) + " " + std::to_string(s.micro_batch);
        if (s.op == 'F') {
            check(s.micro_batch == forwards, "pipeline order: " + where + " out of order; forward " +
                                                 std::to_string(forwards) + " was next");
            ++forwards;
        } else {
            check(s.op == 'B', "pipeline order: unknown step '" + std::string(1, s.op) + "' (F or B)");
            check(s.micro_batch == backwards && backwards < forwards,
                  "pipeline order: " + where + " out of order or before its forward; backward " +
                      std::to_string(backwards) + " was next, " + std::to_string(forwards) + " forwards done");
            ++backwards;
        }
    }
    check(forwards == micro_batches && backwards == micro_batches,
          "pipeline order: " + std::to_string(forwards) + " forwards and " + std::to_string(backwards) +
              " backwards for " + std::to_string(micro_batches) + " micro-batches");
}

int peak_in_flight(const std::vector<PipeStep>& order) {
    int now = 0, peak = 0;
    for (const PipeStep& s : order) {
        now += s.op == 'F' ? 1 : -1;
        peak = std::max(peak, now);
    }
    return peak;
}

PipelineStage::PipelineStage(std::shared_ptr<nn::Module> stage, Communicator& comm, std::int64_t input_features)
    : stage_(std::move(stage)), comm_(comm), input_features_(input_features) {
    check(stage_ != nullptr && input_features >= 1, "PipelineStage: need a module and input_features >= 1");
    check(!comm.memory_is_device(), "PipelineStage works on host tensors (the threads and MPI backends)");
}

namespace {

using Clock = std::chrono::steady_clock;

/// A send put off until the stage's next receive, so the two can run as one sendrecv.
struct PendingSend {
    Tensor data;  // contiguous float32; kept alive until sent
    int dest = 0;
    double ready_s = 0.0;  // with a stand-in device: when that device finished making it
};

/// Sends @p pending (if any) and receives into @p incoming (if defined) from @p src,
/// together when there are both.
void exchange(Communicator& comm, std::optional<PendingSend>& pending, Tensor& incoming, int src) {
    const auto bytes = [](const Tensor& t) { return static_cast<std::size_t>(t.numel()) * sizeof(float); };
    if (pending && incoming.defined())
        comm.sendrecv(pending->data.raw_data(), bytes(pending->data), pending->dest, incoming.raw_data(),
                      bytes(incoming), src);
    else if (pending)
        comm.send(pending->data.raw_data(), bytes(pending->data), pending->dest);
    else if (incoming.defined())
        comm.recv(incoming.raw_data(), bytes(incoming), src);
    pending.reset();
}

/// A message's float32 payload with its ready time appended (as two floats' bytes).
constexpr std::int64_t kReadyFloats = sizeof(double) / sizeof(float);
Tensor with_ready_time(const Tensor& data, double ready_s) {
    Tensor out = empty({data.numel() + kReadyFloats});
    std::memcpy(out.raw_data(), data.raw_data(), static_cast<std::size_t>(data.numel()) * sizeof(float));
    std::memcpy(out.data<float>() + data.numel(), &ready_s, sizeof(double));
    return out;
}

/// exchange() for a stand-in device: each message carries its ready time after the
/// payload (one message, so the pairing of sends and receives is exchange()'s);
/// returns the incoming one's (0 when nothing came in).
double exchange_with_ready_times(Communicator& comm, std::optional<PendingSend>& pending, Tensor& incoming, int src) {
    if (pending) pending->data = with_ready_time(pending->data, pending->ready_s);
    Tensor buffer = incoming.defined() ? empty({incoming.numel() + kReadyFloats}) : Tensor();
    exchange(comm, pending, buffer, src);
    if (!incoming.defined()) return 0.0;
    std::memcpy(incoming.raw_data(), buffer.raw_data(), static_cast<std::size_t>(incoming.numel()) * sizeof(float));
    double ready_s = 0.0;
    std::memcpy(&ready_s, buffer.data<float>() + incoming.numel(), sizeof(double));
    return ready_s;
}

/// Entries [begin, begin + count) of a 1-D int32 tensor.
Tensor copy_targets(const Tensor& targets, std::int64_t begin, std::int64_t count) {
    return reshape(copy_rows(reshape(targets, {targets.numel(), 1}), begin, count), {count});
}

std::size_t bytes_of(const Tensor& t) { return t.defined() ? static_cast<std::size_t>(t.numel()) * sizeof(float) : 0; }

/// What a stage keeps of a micro-batch between its forward and its backward.
struct Stash {
    Tensor input;   // the leaf the stage's forward started from
    Tensor output;  // the stage's output (the last stage: the scaled loss)
};

}  // namespace

PipelineStats PipelineStage::step(const Batch& batch, const PipelineOptions& options) {
    const int p = comm_.size(), s = comm_.rank(), m = options.micro_batches;
    const bool first = s == 0, last = s == p - 1;
    const std::vector<PipeStep> order = schedule_order(options.schedule, p, m, s);
    check_pipe_order(order, m);
    const std::int64_t rows = first ? batch.inputs.size(0) : batch.targets.numel();
    check(rows >= m, "pipeline: a batch of " + std::to_string(rows) + " rows cannot make " + std::to_string(m) +
                         " micro-batches");
    const auto micro = [&](int i) { return ring_chunk(static_cast<std::size_t>(rows), m, i); };

    PipelineStats stats;
    std::vector<Stash> stash(static_cast<std::size_t>(m));
    std::size_t stashed_bytes = 0;
    int in_flight = 0;
    std::optional<PendingSend> pending;
    barrier(comm_);  // the stages' clocks start together
    const Clock::time_point t0 = Clock::now();
    const std::uint64_t bytes_before = comm_.stats().bytes_sent;
    const auto seconds = [&](Clock::time_point t) { return std::chrono::duration<double>(t - t0).count(); };
    // A stand-in device (calibrated waits) keeps its own clock: an op starts when the
    // device is free and its input is ready there (the sender's device time, sent with
    // it), and lasts max(wait, its compute). The host sleeps until then, so the step takes
    // the device's time; a host woken late by a busy machine does not stretch it.
    const bool device_clocks = options.forward_wait_s > 0 || options.backward_wait_s > 0;
    double device_free_s = 0.0;

    for (const PipeStep& st : order) {
        const Chunk mb = micro(st.micro_batch);
        const auto mb_rows = static_cast<std::int64_t>(mb.count);
        Stash& kept = stash[static_cast<std::size_t>(st.micro_batch)];
        Tensor incoming;  // the activation from s-1, or the gradient from s+1
        if (st.op == 'F' && !first) incoming = empty({mb_rows, input_features_});
        if (st.op == 'B' && !last) incoming = empty(kept.output.shape());
        const int src = st.op == 'F' ? s - 1 : s + 1;
        double input_ready_s = 0.0;
        if (device_clocks) input_ready_s = exchange_with_ready_times(comm_, pending, incoming, src);
        else exchange(comm_, pending, incoming, src);

        const Clock::time_point start = Clock::now();
        if (st.op == 'F') {
            Tensor x = first ? copy_rows(reshape(batch.inputs, {rows, batch.inputs.numel() / rows}),
                                         static_cast<std::int64_t>(mb.begin), mb_rows)
                             : incoming;
            if (!first) x.set_requires_grad(true);
            Tensor y = stage_->forward(x);
            if (last) {
                const Tensor targets = copy_targets(batch.targets, static_cast<std::int64_t>(mb.begin), mb_rows);
                const Tensor predicted = argmax(y.detach());
                for (std::int64_t k = 0; k < mb_rows; ++k)
                    stats.correct += predicted.data<std::int32_t>()[k] == targets.data<std::int32_t>()[k];
                // The global loss is the mean over all rows: weight this micro-batch's mean by its share.
                y = cross_entropy(y, targets) * (static_cast<double>(mb_rows) / static_cast<double>(rows));
                stats.loss += y.item();
            } else {
                pending = PendingSend{y.detach().contiguous(), s + 1};
            }
            kept = {x, y};
            stashed_bytes += bytes_of(x) + bytes_of(y);
            ++in_flight;
        } else {
            if (last) kept.output.backward();
            else kept.output.backward(incoming);
            if (!first) pending = PendingSend{kept.input.grad().contiguous(), s - 1};
            stashed_bytes -= bytes_of(kept.input) + bytes_of(kept.output);
            kept = {};
            --in_flight;
        }
        if (device_clocks) {
            const double wait = st.op == 'F' ? options.forward_wait_s : options.backward_wait_s;
            const double begin = std::max(device_free_s, input_ready_s);
            device_free_s = begin + std::max(wait, seconds(Clock::now()) - seconds(start));
            std::this_thread::sleep_until(t0 + std::chrono::duration_cast<Clock::duration>(
                                                   std::chrono::duration<double>(device_free_s)));
            stats.timeline.push_back({st, begin, device_free_s});
            if (pending) pending->ready_s = device_free_s;
        } else {
            stats.timeline.push_back({st, seconds(start), seconds(Clock::now())});
        }
        stats.peak_in_flight = std::max(stats.peak_in_flight, in_flight);
        stats.peak_stashed_bytes = std::max(stats.peak_stashed_bytes, stashed_bytes);
    }
    Tensor nothing;
    if (device_clocks) exchange_with_ready_times(comm_, pending, nothing, s);
    else exchange(comm_, pending, nothing, s);
    stats.bytes_sent = comm_.stats().bytes_sent - bytes_before;
    return stats;
}

std::shared_ptr<nn::Sequential> split_stages(const nn::Sequential& model, int stages, int stage) {
    check(stages >= 1 && stage >= 0 && stage < stages && static_cast<std::size_t>(stages) <= model.size(),
          "split_stages: cannot cut " + std::to_string(model.size()) + " layers into " + std::to_string(stages) +
              " stages (stage " + std::to_string(stage) + ")");
    // Nested Sequentials are layers here; share them through non-owning handles that keep
    // the model's layers, so the stage trains the model's own parameters.
    const Chunk mine = ring_chunk(model.size(), stages, stage);
    auto out = std::make_shared<nn::Sequential>();
    for (std::size_t i = mine.begin; i < mine.begin + mine.count; ++i)
        out->add(std::shared_ptr<nn::Module>(std::shared_ptr<nn::Module>{}, &model.at(i)));
    return out;
}

double bubble_fraction(const std::vector<std::vector<PipeEvent>>& timelines) {
    check(!timelines.empty(), "bubble_fraction: no stages");
    double begin = 1e300, end = -1e300, busy = 0.0;
    for (const auto& stage : timelines)
        for (const PipeEvent& e : stage) {
            begin = std::min(begin, e.start_s);
            end = std::max(end, e.end_s);
            busy += e.end_s - e.start_s;
        }
    check(end > begin, "bubble_fraction: the timelines are empty");
    return 1.0 - busy / (static_cast<double>(timelines.size()) * (end - begin));
}

double ideal_bubble_fraction(int stages, int micro_batches) {
    return static_cast<double>(stages - 1) / static_cast<double>(micro_batches + stages - 1);
}

void write_timeline_json(const std::string& path, const std::string& title,
                         const std::vector<std::vector<PipeEvent>>& timelines) {
    const std::filesystem::path target(path), tmp(path + ".tmp");
    {
        std::ofstream out(tmp);
        check(out.good(), "write_timeline_json: cannot write " + tmp.string() + "; check the folder exists");
        out << "{\"title\": \"" << title << "\", \"stages\": [";
        for (std::size_t s = 0; s < timelines.size(); ++s) {
            out << (s ? ",\n" : "\n") << "  [";
            for (std::size_t k = 0; k < timelines[s].size(); ++k) {
                const PipeEvent& e = timelines[s][k];
                char line[160];
                std::snprintf(line, sizeof line, "%s{\"op\": \"%c\", \"mb\": %d, \"start\": %.9f, \"end\": %.9f}",
                              k ? ", " : "", e.step.op, e.step.micro_batch, e.start_s, e.end_s);
                out << line;
            }
            out << "]";
        }
        out << "\n]}\n";
        check(out.good(), "write_timeline_json: writing " + tmp.string() + " failed");
    }
    std::filesystem::rename(tmp, target);  // never a partial file at path
}

std::uint64_t pipeline_bytes_sent(std::int64_t rows, std::int64_t in_features, std::int64_t out_features, int stages,
                                  int stage) {
    const std::uint64_t forward = stage < stages - 1 ? static_cast<std::uint64_t>(rows * out_features) : 0;
    const std::uint64_t backward = stage > 0 ? static_cast<std::uint64_t>(rows * in_features) : 0;
    return (forward + backward) * sizeof(float);
}

}  // namespace gl::dist
