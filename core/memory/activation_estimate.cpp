#include "memory/activation_estimate.hpp"

#include <cstdio>

namespace gl::memory {
namespace {

constexpr double kFloat = 4.0;

/// A feature map of one example: channels x height x width.
struct Map {
    std::int64_t c, h, w;
    double elements() const { return static_cast<double>(c * h * w); }
};

/// Adds up a walk: what is saved, one output per layer, and the parameters.
struct Walk {
    ActivationEstimate e;
    double stage_start = 0.0;
    void save(const Map& m, double bytes_per_element = kFloat) { e.saved_bytes_per_example += m.elements() * bytes_per_element; }
    void layer_output(const Map& m) { e.layer_output_bytes_per_example += m.elements() * kFloat; }
    void end_stage(const std::string& name) {
        char line[96];
        std::snprintf(line, sizeof line, "%s: %.2f MiB saved per example", name.c_str(),
                      (e.saved_bytes_per_example - stage_start) / (1024.0 * 1024.0));
        e.stages.push_back(line);
        stage_start = e.saved_bytes_per_example;
    }
};

// conv (no bias) -> batch norm [-> in-place ReLU]: returns the output map.
Map conv_bn(Walk& walk, const Map& in, std::int64_t out_channels, std::int64_t kernel, std::int64_t stride,
            bool relu) {
    const std::int64_t pad = kernel / 2;
    const Map out{out_channels, (in.h + 2 * pad - kernel) / stride + 1, (in.w + 2 * pad - kernel) / stride + 1};
    // The conv's input was saved by whoever produced it (a ReLU, the pool, the image).
    walk.e.parameters += out_channels * in.c * kernel * kernel + 2 * out_channels;  // weight, BN gamma/beta
    walk.save(out);                                                                  // BN keeps its input
    walk.e.saved_bytes_per_example += 2.0 * static_cast<double>(out_channels) * kFloat;  // BN mean, inverse std
    walk.layer_output(out);
    if (relu) walk.save(out);  // the in-place ReLU keeps its output (= the next conv's input)
    return out;
}

// A bottleneck block: 1x1 reduce, 3x3 (with the stride), 1x1 expand, plus the shortcut.
Map bottleneck(Walk& walk, const Map& in, std::int64_t width, std::int64_t stride) {
    const std::int64_t out_channels = 4 * width;
    Map h = conv_bn(walk, in, width, 1, 1, true);
    h = conv_bn(walk, h, width, 3, stride, true);
    h = conv_bn(walk, h, out_channels, 1, 1, false);  // its BN output goes into the add: not saved
    if (stride != 1 || in.c != out_channels) conv_bn(walk, in, out_channels, 1, stride, false);  // projection
    walk.save(h);  // the ReLU after the add keeps its output
    return h;
}

}  // namespace

ActivationEstimate estimate_mlp(std::int64_t layers, std::int64_t width, std::int64_t in, std::int64_t classes) {
    Walk walk;
    walk.save(Map{in, 1, 1});  // the first matmul keeps the input batch
    for (std::int64_t i = 0; i < layers; ++i) {
        walk.save(Map{width, 1, 1});  // ReLU output, also the next matmul's input
        walk.layer_output(Map{width, 1, 1});
        walk.e.parameters += (i == 0 ? in : width) * width + width;
    }
    walk.layer_output(Map{classes, 1, 1});
    walk.e.parameters += width * classes + classes;
    walk.save(Map{classes, 1, 1});                 // cross-entropy's log-probabilities
    walk.e.saved_bytes_per_example += 4.0;        // and its int32 target
    walk.end_stage("mlp");
    return walk.e;
}

ActivationEstimate estimate_resnet50() {
    Walk walk;
    Map x{3, 224, 224};
    walk.save(x);  // the first conv keeps the image
    x = conv_bn(walk, x, 64, 7, 2, true);  // 64 x 112 x 112
    const Map pooled{64, (x.h + 2 - 3) / 2 + 1, (x.w + 2 - 3) / 2 + 1};  // 3x3 max-pool, stride 2, pad 1
    walk.save(pooled, 8.0);  // max-pool keeps int64 indices (its input is the ReLU output, already saved)
    walk.save(pooled);       // the pooled map is the first block's input
    x = pooled;
    walk.end_stage("stem");
    const std::int64_t blocks[] = {3, 4, 6, 3}, widths[] = {64, 128, 256, 512};
    for (int stage = 0; stage < 4; ++stage) {
        for (std::int64_t b = 0; b < blocks[stage]; ++b)
            x = bottleneck(walk, x, widths[stage], b == 0 && stage > 0 ? 2 : 1);
        walk.end_stage("layer" + std::to_string(stage + 1));
    }
    // Global average pool (keeps nothing), then the 2048 -> 1000 classifier and the loss.
    walk.save(Map{x.c, 1, 1});
    walk.e.parameters += x.c * 1000 + 1000;
    walk.layer_output(Map{1000, 1, 1});
    walk.save(Map{1000, 1, 1});
    walk.end_stage("head");
    return walk.e;
}

}  // namespace gl::memory
