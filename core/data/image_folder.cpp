#include "data/image_folder.hpp"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iterator>

#include "base/error.hpp"
#include "data/mnist_files.hpp"

namespace gl {

namespace fs = std::filesystem;

namespace {

bool is_image_file(const fs::path& p) {
    std::string ext = p.extension().string();
    std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return ext == ".jpg" || ext == ".jpeg" || ext == ".png";
}

std::vector<std::uint8_t> read_bytes(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    check(static_cast<bool>(in), "cannot open the file");
    return std::vector<std::uint8_t>(std::istreambuf_iterator<char>(in), {});
}

void write_bytes(const fs::path& path, const std::vector<std::uint8_t>& bytes) {
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    check(static_cast<bool>(out), "export: cannot write " + path.string() + " (disk full? permissions?)");
}

}  // namespace

ImageFolder::ImageFolder(const fs::path& root, ImageFolderOptions options) : options_(std::move(options)) {
    check(fs::is_directory(root), "ImageFolder: " + root.string() +
                                      " is not a folder; give a folder with one sub-folder of images per class "
                                      "(gradlab data export-images makes one)");
    for (const auto& entry : fs::directory_iterator(root))
        if (entry.is_directory()) classes_.push_back(entry.path().filename().string());
    std::sort(classes_.begin(), classes_.end());
    check(!classes_.empty(), "ImageFolder: " + root.string() + " has no class folders (root/CLASS/image.jpg)");
    for (std::size_t label = 0; label < classes_.size(); ++label) {
        std::vector<fs::path> paths;
        for (const auto& entry : fs::directory_iterator(root / classes_[label]))
            if (entry.is_regular_file() && is_image_file(entry.path())) paths.push_back(entry.path());
        std::sort(paths.begin(), paths.end());
        for (auto& p : paths) files_.push_back({std::move(p), static_cast<std::int32_t>(label)});
    }
    check(!files_.empty(), "ImageFolder: " + root.string() + " has class folders but no .jpg, .jpeg or .png files");
    if (options_.image_shape.empty()) {
        // The first file sets the size; if it is bad, say so now rather than at batch time.
        try {
            options_.image_shape = to_tensor(decode_image(read_bytes(files_[0].path))).shape();
        } catch (const std::exception& e) {
            throw Error("ImageFolder: " + files_[0].path.string() + ": " + e.what() +
                        " (the first file sets the image size; fix it or give ImageFolderOptions::image_shape)");
        }
    }
    check(options_.image_shape.size() == 3, "ImageFolder: image_shape must be [C, H, W]");
    example_shape_ = options_.transform ? options_.transform->output_shape(options_.image_shape) : options_.image_shape;
}

Tensor ImageFolder::load(const Entry& entry) const {
    const Tensor image = to_tensor(decode_image(read_bytes(entry.path)));
    check(image.shape() == options_.image_shape, [&] {
        return "wrong size: the image is " + shape_str(image.shape()) + " [C, H, W] but the data set's are " +
               shape_str(options_.image_shape);
    });
    return image;
}

std::optional<Example> ImageFolder::get_example(std::size_t index, Rng& rng) const {
    const Entry& entry = files_.at(index);
    Tensor image;
    try {
        image = load(entry);
    } catch (const std::exception& e) {
        const std::string what = entry.path.string() + ": " + e.what();
        if (!options_.skip_bad_files)
            throw Error(what + " (remove or replace the file, or set skip_bad_files to skip bad files)");
        ++skipped_;
        std::lock_guard lock(skipped_mutex_);
        skipped_files_.push_back(what);
        return std::nullopt;
    }
    if (options_.transform) image = options_.transform->apply(image, rng);
    return Example{image, entry.label};
}

std::vector<std::string> ImageFolder::skipped_files() const {
    std::lock_guard lock(skipped_mutex_);
    return skipped_files_;
}

std::size_t export_image_folder(const fs::path& mnist_dir, const fs::path& root, ImageFormat format, std::size_t limit) {
    check(!fs::exists(root) || (fs::is_directory(root) && fs::is_empty(root)),
          "export-images: " + root.string() + " exists and is not an empty folder; give a new folder");
    const MnistFiles data = read_mnist_files(mnist_dir, MnistSplit::Train);
    const std::size_t count =
        limit == 0 ? static_cast<std::size_t>(data.count) : std::min(limit, static_cast<std::size_t>(data.count));
    // Write into a sibling temporary folder and rename at the end: an interrupted export
    // never leaves a half-written data set under the name asked for.
    const fs::path partial = root.string() + ".partial";
    fs::remove_all(partial);
    for (std::int64_t c = 0; c < kMnistClasses; ++c) fs::create_directories(partial / std::to_string(c));
    const std::size_t pixels = static_cast<std::size_t>(data.pixels_per_image);
    const char* ext = format == ImageFormat::Jpeg ? "jpg" : "png";
    for (std::size_t i = 0; i < count; ++i) {
        Image image{static_cast<int>(data.height), static_cast<int>(data.width), 1, {}};
        const auto* first = data.images.bytes.data() + i * pixels;
        image.pixels.assign(first, first + pixels);
        char name[32];
        std::snprintf(name, sizeof name, "%05zu.%s", i, ext);
        write_bytes(partial / std::to_string(data.labels.bytes[i]) / name, encode_image(image, format));
    }
    if (fs::exists(root)) fs::remove(root);
    fs::rename(partial, root);
    return count;
}

}  // namespace gl
