/// @file
/// @brief The files of an MNIST-format folder: found, read and checked, before any tensor.
///
/// Owns: where the files of each split are, and what makes them a data set: N images of
/// H x W ubyte pixels, N labels in 0..9, N at least 1. Knows nothing about tensors
/// (mnist.hpp turns the checked bytes into them), so the data set fuzzer
/// (tests/fuzz/) can run every check here without the rest of the library.
#pragma once

#include <cstdint>
#include <filesystem>

#include "data/idx.hpp"

namespace gl {

/// Which half of an MNIST-format folder to load.
enum class MnistSplit {
    Train,  ///< train-images-idx3-ubyte / train-labels-idx1-ubyte (60000 examples)
    Test,   ///< t10k-images-idx3-ubyte / t10k-labels-idx1-ubyte (10000 examples)
};

/// The number of classes of MNIST and Fashion-MNIST; labels lie in 0..kMnistClasses-1.
inline constexpr std::int64_t kMnistClasses = 10;

/// Where Debian's dataset-fashion-mnist package installs its files (.gz):
/// /usr/share/datasets/fashion-mnist.
std::filesystem::path default_fashion_mnist_dir();

/// One split's images and labels, read and checked against each other.
struct MnistFiles {
    IdxArray images;                    ///< ubyte [count, height, width]
    IdxArray labels;                    ///< ubyte [count], each below kMnistClasses
    std::int64_t count = 0;             ///< examples (at least 1)
    std::int64_t height = 0;            ///< image height in pixels (at least 1)
    std::int64_t width = 0;             ///< image width in pixels (at least 1)
    std::int64_t pixels_per_image = 0;  ///< height * width
};

/// Reads @p split from @p dir. Each file may be raw or gzip-compressed
/// (`train-images-idx3-ubyte` or `train-images-idx3-ubyte.gz`); the raw one is used when
/// both exist. Throws gl::Error naming the folder or file and what is wrong: a missing
/// folder or file, a bad IDX file (read_idx), images that are not N x H x W ubyte, no
/// images at all, labels that are not N ubyte, a label out of range.
MnistFiles read_mnist_files(const std::filesystem::path& dir, MnistSplit split);

}  // namespace gl
