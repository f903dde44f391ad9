/// @file
/// @brief MNIST and Fashion-MNIST: 28 x 28 grey images of ten classes, from IDX files.
///
/// Owns: turning the checked bytes of one split (mnist_files.hpp finds, reads and checks
/// the files) into normalised float inputs and int32 targets.
#pragma once

#include <cstdint>
#include <filesystem>

#include "data/dataset.hpp"
#include "data/mnist_files.hpp"

namespace gl {

/// How pixel bytes become inputs: x = byte / 255, then (x - mean) / stddev if normalize.
struct MnistOptions {
    bool normalize = true;   ///< subtract mean and divide by stddev after scaling to [0, 1]
    float mean = 0.2860f;    ///< mean pixel of the training set (Fashion-MNIST's)
    float stddev = 0.3530f;  ///< pixel standard deviation of the training set (Fashion-MNIST's)
};

/// One split of an MNIST-format folder in memory: inputs float32 [N, H*W] (784 for
/// 28 x 28 images), targets int32 [N] in 0..9.
///
/// The files are found and checked by read_mnist_files (mnist_files.hpp): raw or gzipped,
/// N >= 1 images of H x W ubyte, N labels in 0..9.
class MnistDataset : public TensorDataset {
public:
    /// Loads @p split from @p dir; throws gl::Error naming the folder or file and what is
    /// wrong (a missing folder or file, a bad IDX file, no images, mismatched counts, a bad
    /// label), or the option that is out of range.
    MnistDataset(const std::filesystem::path& dir, MnistSplit split, const MnistOptions& options = {});

    /// Image height in pixels (28 for MNIST).
    std::int64_t image_height() const { return height_; }
    /// Image width in pixels (28 for MNIST).
    std::int64_t image_width() const { return width_; }

private:
    struct Loaded;
    static Loaded load(const std::filesystem::path& dir, MnistSplit split, const MnistOptions& options);
    explicit MnistDataset(Loaded loaded);
    std::int64_t height_;
    std::int64_t width_;
};

}  // namespace gl
