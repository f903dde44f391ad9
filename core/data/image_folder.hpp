/// @file
/// @brief A data set of encoded images in one folder per class, like torchvision's ImageFolder.
///
/// Owns: finding the classes (sub-folders, sorted by name) and their JPEG/PNG files
/// (sorted), decoding a file per example (image_codec.hpp), running the transform
/// pipeline (transforms.hpp) with the sample's own generator, and what happens to a bad
/// file: an error naming it, or, on request, skipping it and counting it. Also writes an
/// MNIST-format data set out in this layout (export_image_folder).
#pragma once

#include <atomic>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "data/dataset.hpp"
#include "data/image_codec.hpp"
#include "data/transforms.hpp"

namespace gl {

/// Settings of an ImageFolder.
struct ImageFolderOptions {
    /// Applied to each decoded image (ToTensor's float [C, H, W] in [0, 1]); null keeps it.
    std::shared_ptr<const Transform> transform;
    /// Skip files that fail to decode or have the wrong size (counted) instead of stopping.
    bool skip_bad_files = false;
    /// The size every file must decode to, [C, H, W]; empty takes the first file's.
    Shape image_shape;
};

/// root/CLASS/FILE.{jpg,jpeg,png}: one example per file, its class the folder's position
/// among the sorted class folders.
class ImageFolder : public ExampleDataset {
public:
    /// Lists @p root's classes and files; throws gl::Error if @p root is not a folder,
    /// has no class folders, or no image files at all.
    explicit ImageFolder(const std::filesystem::path& root, ImageFolderOptions options = {});

    /// Number of image files.
    std::size_t size() const override { return files_.size(); }
    /// The transform's output shape for image_shape.
    Shape example_shape() const override { return example_shape_; }
    /// Number of class folders.
    std::int64_t num_classes() const override { return static_cast<std::int64_t>(classes_.size()); }
    /// Reads, decodes, checks and transforms file @p index. A bad file throws gl::Error
    /// "PATH: what is wrong" (or is skipped and counted with skip_bad_files).
    std::optional<Example> get_example(std::size_t index, Rng& rng) const override;

    /// The class names, in label order.
    const std::vector<std::string>& classes() const { return classes_; }
    /// The file of example @p index.
    const std::filesystem::path& file(std::size_t index) const { return files_.at(index).path; }
    /// Bad files skipped so far (each time one was met).
    std::size_t skipped() const { return skipped_.load(); }
    /// The bad files skipped so far and why, "PATH: reason".
    std::vector<std::string> skipped_files() const;

private:
    struct Entry {
        std::filesystem::path path;
        std::int32_t label;
    };
    Tensor load(const Entry& entry) const;
    std::vector<std::string> classes_;
    std::vector<Entry> files_;
    ImageFolderOptions options_;
    Shape example_shape_;
    mutable std::atomic<std::size_t> skipped_{0};
    mutable std::mutex skipped_mutex_;
    mutable std::vector<std::string> skipped_files_;
};

/// Writes MNIST-format images as root/CLASS/NNNNN.{jpg,png} (CLASS = "0".."9"), a
/// real, really encoded image folder. @p limit caps the number written (0: all).
/// Returns the number of files written. Throws if @p root exists and is not empty.
std::size_t export_image_folder(const std::filesystem::path& mnist_dir, const std::filesystem::path& root,
                                ImageFormat format, std::size_t limit = 0);

}  // namespace gl
