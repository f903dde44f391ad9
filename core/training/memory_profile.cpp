#include "training/memory_profile.hpp"

#include <algorithm>
#include <cstdio>

#include "nn/checkpoint_sequential.hpp"
#include "ops/ops.hpp"

namespace gl::training {

Tensor forward_in_segments(nn::Sequential& model, const Tensor& x, std::size_t segments) {
    return segments == 0 ? model.forward(x) : nn::checkpoint_sequential(model, segments, x);
}

memory::MemoryStats measure_training_step(memory::TrackingAllocator& tracker, nn::Sequential& model,
                                          optim::Optimizer& optimizer, const Tensor& x, const Tensor& y,
                                          std::size_t segments) {
    optimizer.zero_grad();
    tracker.reset_peaks();
    {
        // The loss (and with it the whole graph and its saved tensors) is freed at the
        // end of this block, as in a training loop.
        const Tensor loss = cross_entropy(forward_in_segments(model, x, segments), y);
        loss.backward();
    }
    optimizer.step();
    return tracker.stats();
}

memory::MemoryStats max_of(const memory::MemoryStats& a, const memory::MemoryStats& b) {
    memory::MemoryStats m = b;
    for (std::size_t i = 0; i < memory::kMemoryCategoryCount; ++i) {
        m.current[i] = std::max(a.current[i], b.current[i]);
        m.peak[i] = std::max(a.peak[i], b.peak[i]);
    }
    m.total_current = std::max(a.total_current, b.total_current);
    m.total_peak = std::max(a.total_peak, b.total_peak);
    m.allocations = std::max(a.allocations, b.allocations);
    m.deallocations = std::max(a.deallocations, b.deallocations);
    return m;
}

std::string format_bytes(double bytes) {
    char buf[32];
    if (bytes >= 1024.0 * 1024.0 * 1024.0) std::snprintf(buf, sizeof buf, "%.2f GiB", bytes / (1024.0 * 1024.0 * 1024.0));
    else if (bytes >= 1024.0 * 1024.0) std::snprintf(buf, sizeof buf, "%.2f MiB", bytes / (1024.0 * 1024.0));
    else if (bytes >= 1024.0) std::snprintf(buf, sizeof buf, "%.1f KiB", bytes / 1024.0);
    else std::snprintf(buf, sizeof buf, "%.0f B", bytes);
    return buf;
}

std::string format_memory_table(const memory::MemoryStats& stats, bool with_current) {
    std::string out;
    char line[128];
    auto row = [&](const std::string& name, std::size_t now, std::size_t peak) {
        const std::string now_text = with_current ? format_bytes(static_cast<double>(now)) : "";
        std::snprintf(line, sizeof line, "  %-18s %12s %12s\n", name.c_str(), now_text.c_str(),
                      format_bytes(static_cast<double>(peak)).c_str());
        out += line;
    };
    std::snprintf(line, sizeof line, "  %-18s %12s %12s\n", "category", with_current ? "now" : "", "peak");
    out += line;
    for (const auto c : memory::kAllMemoryCategories) row(memory::name_of(c), stats.current_of(c), stats.peak_of(c));
    row("total", stats.total_current, stats.total_peak);
    return out;
}

}  // namespace gl::training
