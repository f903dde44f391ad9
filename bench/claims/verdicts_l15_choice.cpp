#include "verdicts_l15_choice.hpp"

#include <set>

namespace gl::claims {

GpuModel h200_model() {
    GpuModel g;
    g.name = "NVIDIA H200 SXM (modelled)";
    g.launch_us = 4.0;
    g.sync_us = 10.0;
    g.link_gbs = 50.0;
    g.fp32_tflops = 6.7;
    g.source =
        "launch 4 us and sync 10 us: NVIDIA Technical Blog 'Getting Started with CUDA Graphs' (2019) measures "
        "3.8 us per short kernel launched back to back and 9.6 us with a stream sync after each; link 50 GB/s: "
        "PCIe Gen5 x16, 64 GB/s each way (H200 datasheet: 128 GB/s both ways), ~80% reached from pinned memory; "
        "FP32 6.7 TFLOP/s: 10% of the datasheet's 67 TFLOP/s FP32 peak, the floor issue 13 sets our tiled SGEMM "
        "(a lower bound: cuBLAS reaches several times more)";
    return g;
}

double modeled_gpu_seconds(const GpuModel& gpu, const StepCounts& step) {
    const double launches = step.kernels * gpu.launch_us * 1e-6;
    const double copy = step.bytes_to_device / (gpu.link_gbs * 1e9);
    const double arithmetic = step.flops / (gpu.fp32_tflops * 1e12);
    return launches + copy + arithmetic + gpu.sync_us * 1e-6;
}

namespace {

std::vector<ChoicePoint> of_batch(const std::vector<ChoicePoint>& points, std::int64_t batch) {
    std::vector<ChoicePoint> mine;
    for (const auto& p : points)
        if (p.batch == batch) mine.push_back(p);
    return mine;
}

std::string point_text(const ChoicePoint& p) {
    return "width " + std::to_string(p.width) + " (CPU " + fixed(p.cpu_seconds * 1e3, 3) + " ms, GPU " +
           fixed(p.gpu_seconds * 1e3, 3) + " ms)";
}

}  // namespace

std::optional<std::size_t> crossover(const std::vector<ChoicePoint>& points, std::int64_t batch) {
    const std::vector<ChoicePoint> mine = of_batch(points, batch);
    // Walk back from the largest width while the GPU stays faster.
    std::size_t first = mine.size();
    while (first > 0 && mine[first - 1].gpu_seconds < mine[first - 1].cpu_seconds) --first;
    if (first == mine.size()) return std::nullopt;
    return first;
}

Judgement judge_choice1(const Choice1Measured& m) {
    std::set<std::int64_t> batches;
    for (const auto& p : m.points) batches.insert(p.batch);
    if (batches.empty()) return {Verdict::NotRun, "no sizes were measured"};
    bool every_batch_crosses = true;
    std::string text;
    for (const std::int64_t batch : batches) {
        const std::vector<ChoicePoint> mine = of_batch(m.points, batch);
        const std::optional<std::size_t> at = crossover(m.points, batch);
        const bool crosses = at && *at > 0;  // the CPU wins the smallest, the GPU the largest
        every_batch_crosses = every_batch_crosses && crosses;
        text += (text.empty() ? "" : "; ") + std::string("batch ") + std::to_string(batch) + ": ";
        if (crosses)
            text += "CPU faster up to " + point_text(mine[*at - 1]) + ", GPU faster from " + point_text(mine[*at]);
        else if (at)
            text += "GPU faster already at the smallest, " + point_text(mine.front());
        else
            text += "CPU still faster at the largest, " + point_text(mine.back());
    }
    if (!m.gpu_measured)
        return {Verdict::NeedsGpu, "CPU times measured, GPU times from a model of " + m.gpu +
                                       ", which predicts: " + text + " (a GPU run measures both halves)"};
    return {every_batch_crosses ? Verdict::Reproduced : Verdict::NotReproduced,
            "measured on " + m.gpu + ": " + text +
                (every_batch_crosses ? "" : " (NOT a crossover inside the range for every batch)")};
}

}  // namespace gl::claims
