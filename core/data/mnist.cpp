#include "data/mnist.hpp"

#include <array>
#include <cmath>

namespace gl {

/// What the loading steps produce, handed to the TensorDataset base in one piece.
struct MnistDataset::Loaded {
    Tensor inputs;
    Tensor targets;
    std::int64_t height = 0;
    std::int64_t width = 0;
};

namespace {

void check_options(const MnistOptions& options) {
    if (!options.normalize) return;
    check(std::isfinite(options.mean), "MnistOptions: mean must be a finite number");
    check(std::isfinite(options.stddev) && options.stddev > 0,
          "MnistOptions: stddev must be positive, got " + std::to_string(options.stddev) +
              " (set normalize = false to skip normalisation)");
}

/// float32 [N, H*W]. Only 256 pixel values exist, so each is converted once into a table.
Tensor pixels_to_inputs(const MnistFiles& files, const MnistOptions& options) {
    std::array<float, 256> value{};
    for (int b = 0; b < 256; ++b) {
        const float x = static_cast<float>(b) / 255.0f;
        value[b] = options.normalize ? (x - options.mean) / options.stddev : x;
    }
    Tensor inputs = empty({files.count, files.pixels_per_image}, DType::Float32);
    float* dst = inputs.data<float>();
    const auto& pixels = files.images.bytes;
    for (std::size_t i = 0; i < pixels.size(); ++i) dst[i] = value[pixels[i]];
    return inputs;
}

Tensor labels_to_targets(const MnistFiles& files) {
    Tensor targets = empty({files.count}, DType::Int32);
    std::int32_t* dst = targets.data<std::int32_t>();
    const auto& labels = files.labels.bytes;
    for (std::size_t i = 0; i < labels.size(); ++i) dst[i] = labels[i];
    return targets;
}

}  // namespace

MnistDataset::Loaded MnistDataset::load(const std::filesystem::path& dir, MnistSplit split,
                                        const MnistOptions& options) {
    check_options(options);
    const MnistFiles files = read_mnist_files(dir, split);
    return Loaded{pixels_to_inputs(files, options), labels_to_targets(files), files.height, files.width};
}

MnistDataset::MnistDataset(const std::filesystem::path& dir, MnistSplit split,
                           const MnistOptions& options)
    : MnistDataset(load(dir, split, options)) {}

MnistDataset::MnistDataset(Loaded loaded)
    : TensorDataset(loaded.inputs, loaded.targets, kMnistClasses),
      height_(loaded.height),
      width_(loaded.width) {}

}  // namespace gl
