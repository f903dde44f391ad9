/// @file
/// @brief MNIST and Fashion-MNIST: 28 x 28 grey images of ten classes, from IDX files.
///
/// Owns: finding the four files of an MNIST-format folder, checking that images and
/// labels agree, and turning the bytes into normalised float inputs and int32 targets.
/// Reading the IDX format itself is idx.hpp's job.
#pragma once

#include <cstdint>
#include <filesystem>

#include "data/dataset.hpp"

namespace gl {

/// Which half of an MNIST-format folder to load.
enum class MnistSplit {
    Train,  ///< train-images-idx3-ubyte / train-labels-idx1-ubyte (60000 examples)
    Test,   ///< t10k-images-idx3-ubyte / t10k-labels-idx1-ubyte (10000 examples)
};

/// How pixel bytes become inputs: x = byte / 255, then (x - mean) / stddev if normalize.
struct MnistOptions {
    bool normalize = true;   ///< subtract mean and divide by stddev after scaling to [0, 1]
    float mean = 0.2860f;    ///< mean pixel of the training set (Fashion-MNIST's)
    float stddev = 0.3530f;  ///< pixel standard deviation of the training set (Fashion-MNIST's)
};

/// Where Debian's dataset-fashion-mnist package installs its files (.gz):
/// /usr/share/datasets/fashion-mnist.
std::filesystem::path default_fashion_mnist_dir();

/// One split of an MNIST-format folder in memory: inputs float32 [N, H*W] (784 for
/// 28 x 28 images), targets int32 [N] in 0..9.
///
/// Each file may be raw or gzip-compressed (`train-images-idx3-ubyte` or
/// `train-images-idx3-ubyte.gz`); the raw one is used when both exist. Images must be
/// N x H x W ubyte, labels N ubyte in 0..9, with the same N.
class MnistDataset : public TensorDataset {
public:
    /// Loads @p split from @p dir; throws gl::Error naming the folder or file and what is
    /// wrong (a missing folder or file, a bad IDX file, mismatched counts, a bad label).
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
