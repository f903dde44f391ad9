#include "data/mnist_files.hpp"

#include <optional>
#include <string>

#include "base/checked_arithmetic.hpp"

namespace gl {

std::filesystem::path default_fashion_mnist_dir() { return "/usr/share/datasets/fashion-mnist"; }

namespace {

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

/// Checks N x H x W ubyte with N, H, W at least 1; returns H * W.
std::int64_t check_images(const IdxArray& images, const std::filesystem::path& path) {
    const std::string where = path.string() + ": ";
    check(images.type == IdxType::UInt8,
          where + "images must be ubyte pixels, the file holds " + idx_type_name(images.type));
    check(images.shape.size() == 3,
          where + "images must be N x H x W, the file holds " +
              std::to_string(images.shape.size()) + " dimensions");
    // Before the pixel count: with no images, read_idx accepts any height and width.
    check(images.shape[0] > 0, where + "the file holds 0 images; a data set to train or test "
                                       "on needs at least one (is it the right file?)");
    check(images.shape[1] > 0 && images.shape[2] > 0,
          where + "images of " + std::to_string(images.shape[1]) + " x " +
              std::to_string(images.shape[2]) + " pixels hold nothing");
    const std::optional<std::int64_t> pixels = checked_mul(images.shape[1], images.shape[2]);
    check(pixels.has_value(), where + "images of " + std::to_string(images.shape[1]) + " x " +
                                  std::to_string(images.shape[2]) + " pixels: the header is corrupt");
    return *pixels;
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
        check(labels.bytes[i] < kMnistClasses,
              where + "label " + std::to_string(labels.bytes[i]) + " at index " +
                  std::to_string(i) + " is out of range 0.." + std::to_string(kMnistClasses - 1));
}

}  // namespace

MnistFiles read_mnist_files(const std::filesystem::path& dir, MnistSplit split) {
    check_folder(dir);
    const std::string prefix = split == MnistSplit::Train ? "train" : "t10k";
    const auto images_path = find_file(dir, prefix + "-images-idx3-ubyte");
    const auto labels_path = find_file(dir, prefix + "-labels-idx1-ubyte");
    MnistFiles f;
    f.images = read_idx(images_path);
    f.pixels_per_image = check_images(f.images, images_path);
    f.count = f.images.shape[0];
    f.height = f.images.shape[1];
    f.width = f.images.shape[2];
    f.labels = read_idx(labels_path);
    check_labels(f.labels, labels_path, f.count, images_path);
    return f;
}

}  // namespace gl
