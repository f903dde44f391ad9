#include "data/mnist.hpp"

#include <array>
#include <cmath>

#include "data/idx.hpp"

namespace gl {

/// What the loading steps produce, handed to the TensorDataset base in one piece.
struct MnistDataset::Loaded {
    Tensor inputs;
    Tensor targets;
    std::int64_t height = 0;
    std::int64_t width = 0;
};

std::filesystem::path default_fashion_mnist_dir() { return "/usr/share/datasets/fashion-mnist"; }

namespace {

constexpr std::int64_t kNumClasses = 10;

std::string install_hint() {
    return "pass the folder that holds the MNIST-format files with --data DIR, or install "
           "Debian's dataset-fashion-mnist package (it puts them in " +
           default_fashion_mnist_dir().string() + ")";
}

void check_folder(const std::filesystem::path& dir) {
    std::error_code ec;
    if (!std::filesystem::exists(dir, ec))
        throw Error("MNIST folder " + dir.string() + " does not exist; " + install_hint());
    if (!std::filesystem::is_directory(dir, ec))
        throw Error("MNIST folder " + dir.string() + " is not a folder; " + install_hint());
}

/// dir/name if it exists, else dir/name.gz; throws naming both when neither does.
std::filesystem::path find_file(const std::filesystem::path& dir, const std::string& name) {
    std::error_code ec;
    const auto raw = dir / name;
    if (std::filesystem::exists(raw, ec)) return raw;
    const auto gz = dir / (name + ".gz");
    if (std::filesystem::exists(gz, ec)) return gz;
    throw Error("MNIST folder " + dir.string() + " has neither " + name + " nor " + name +
                ".gz; " + install_hint());
}

void check_images(const IdxArray& images, const std::filesystem::path& path) {
    const std::string where = path.string() + ": ";
    check(images.type == IdxType::UInt8,
          where + "images must be ubyte pixels, the file holds " + idx_type_name(images.type));
    check(images.shape.size() == 3,
          where + "images must be N x H x W, the file holds " +
              std::to_string(images.shape.size()) + " dimensions");
    check(images.shape[1] > 0 && images.shape[2] > 0,
          where + "images of " + std::to_string(images.shape[1]) + " x " +
              std::to_string(images.shape[2]) + " pixels hold nothing");
}

void check_labels(const IdxArray& labels, const std::filesystem::path& path,
                  std::int64_t num_images, const std::filesystem::path& images_path) {
    const std::string where = path.string() + ": ";
    check(labels.type == IdxType::UInt8,
          where + "labels must be ubyte, the file holds " + idx_type_name(labels.type));
    check(labels.shape.size() == 1, where + "labels must be a 1-d array of N labels, the file "
                                            "holds " + std::to_string(labels.shape.size()) +
                                            " dimensions");
    check(labels.shape[0] == num_images,
          where + std::to_string(labels.shape[0]) + " labels, but " + images_path.string() +
              " holds " + std::to_string(num_images) + " images; they must match one to one");
    for (std::size_t i = 0; i < labels.bytes.size(); ++i)
        check(labels.bytes[i] < kNumClasses,
              where + "label " + std::to_string(labels.bytes[i]) + " at index " +
                  std::to_string(i) + " is out of range 0.." + std::to_string(kNumClasses - 1));
}

void check_options(const MnistOptions& options) {
    if (!options.normalize) return;
    check(std::isfinite(options.mean), "MnistOptions: mean must be a finite number");
    check(std::isfinite(options.stddev) && options.stddev > 0,
          "MnistOptions: stddev must be positive, got " + std::to_string(options.stddev) +
              " (set normalize = false to skip normalisation)");
}

/// float32 [N, H*W]. Only 256 pixel values exist, so each is converted once into a table.
Tensor pixels_to_inputs(const IdxArray& images, const MnistOptions& options) {
    std::array<float, 256> value{};
    for (int b = 0; b < 256; ++b) {
        const float x = static_cast<float>(b) / 255.0f;
        value[b] = options.normalize ? (x - options.mean) / options.stddev : x;
    }
    const std::int64_t n = images.shape[0];
    Tensor inputs = empty({n, images.shape[1] * images.shape[2]}, DType::Float32);
    float* dst = inputs.data<float>();
    for (std::size_t i = 0; i < images.bytes.size(); ++i) dst[i] = value[images.bytes[i]];
    return inputs;
}

Tensor labels_to_targets(const IdxArray& labels) {
    Tensor targets = empty({labels.shape[0]}, DType::Int32);
    std::int32_t* dst = targets.data<std::int32_t>();
    for (std::size_t i = 0; i < labels.bytes.size(); ++i) dst[i] = labels.bytes[i];
    return targets;
}

}  // namespace

MnistDataset::Loaded MnistDataset::load(const std::filesystem::path& dir, MnistSplit split,
                                        const MnistOptions& options) {
    check_options(options);
    check_folder(dir);
    const std::string prefix = split == MnistSplit::Train ? "train" : "t10k";
    const auto images_path = find_file(dir, prefix + "-images-idx3-ubyte");
    const auto labels_path = find_file(dir, prefix + "-labels-idx1-ubyte");
    const IdxArray images = read_idx(images_path);
    check_images(images, images_path);
    const IdxArray labels = read_idx(labels_path);
    check_labels(labels, labels_path, images.shape[0], images_path);
    return Loaded{pixels_to_inputs(images, options), labels_to_targets(labels), images.shape[1],
                  images.shape[2]};
}

MnistDataset::MnistDataset(const std::filesystem::path& dir, MnistSplit split,
                           const MnistOptions& options)
    : MnistDataset(load(dir, split, options)) {}

MnistDataset::MnistDataset(Loaded loaded)
    : TensorDataset(loaded.inputs, loaded.targets, kNumClasses),
      height_(loaded.height),
      width_(loaded.width) {}

}  // namespace gl
