// libFuzzer target for the data set loaders: read_idx (data/idx.hpp) on one file, and
// read_mnist_files (data/mnist_files.hpp) on a folder of an images and a labels file.
//
// The first byte of an input says what to make of the rest:
//   bit 0  the file names end in .gz (read_idx then insists on gzip content)
//   bit 1  MNIST: the next two bytes (big-endian) are the length of the images file,
//          the rest after it is the labels file; otherwise the rest is one IDX file
// Every input must either load, with contents that agree with the header, or throw
// gl::Error. Anything else is a finding: another exception, a crash, a sanitizer report
// (address, undefined behaviour such as signed overflow), a leak, a timeout, a blown
// memory limit.
//
// Build and run: ./gradlab fuzz [SECONDS] (README.md, "Fuzzing the data set loaders").
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "data/idx.hpp"
#include "data/mnist_files.hpp"

namespace {

namespace fs = std::filesystem;

/// A folder of this process's own for the files made from each input (in memory when
/// /dev/shm is there: the fuzzer writes thousands of files a second).
const fs::path& scratch() {
    static const fs::path dir = [] {
        const fs::path base = fs::exists("/dev/shm") ? fs::path("/dev/shm") : fs::temp_directory_path();
        fs::path d = base / ("gradlab-fuzz-" + std::to_string(getpid()));
        fs::create_directories(d);
        return d;
    }();
    return dir;
}

void write_file(const fs::path& path, const std::uint8_t* data, std::size_t size) {
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
    if (!f) {
        std::fprintf(stderr, "fuzz_data_loaders: cannot write %s\n", path.c_str());
        std::abort();  // the harness is broken, not the loader
    }
}

/// Stops the run with @p what when a loaded result disagrees with itself.
void require(bool ok, const char* what) {
    if (ok) return;
    std::fprintf(stderr, "fuzz_data_loaders: loaded, but %s\n", what);
    std::abort();
}

void check_idx(const gl::IdxArray& a) {
    require(!a.shape.empty() && a.shape.size() <= 8, "the array has no or too many dimensions");
    for (auto extent : a.shape) require(extent >= 0 && extent <= 0xFFFFFFFF, "an extent is out of range");
    const auto bytes = static_cast<std::uint64_t>(a.numel()) * gl::idx_type_size(a.type);
    require(bytes == a.bytes.size(), "the bytes do not match the shape");
}

void check_mnist(const gl::MnistFiles& f) {
    check_idx(f.images);
    check_idx(f.labels);
    require(f.count >= 1 && f.height >= 1 && f.width >= 1, "a split with nothing in it was accepted");
    require(f.pixels_per_image == f.height * f.width, "the pixel count is wrong");
    require(static_cast<std::uint64_t>(f.count * f.pixels_per_image) == f.images.bytes.size(),
            "the pixels do not match the count");
    require(f.labels.bytes.size() == static_cast<std::size_t>(f.count), "labels and images differ in number");
    for (auto label : f.labels.bytes) require(label < gl::kMnistClasses, "a label is out of range");
}

void fuzz_idx(bool gz, const std::uint8_t* data, std::size_t size) {
    const fs::path path = scratch() / (gz ? "a.idx.gz" : "a.idx");
    write_file(path, data, size);
    check_idx(gl::read_idx(path));
}

void fuzz_mnist(bool gz, const std::uint8_t* data, std::size_t size) {
    if (size < 2) return;
    const std::size_t split = std::min<std::size_t>((std::size_t{data[0]} << 8) | data[1], size - 2);
    const fs::path dir = scratch() / "mnist";
    fs::remove_all(dir);  // a raw file left from an earlier input would shadow a .gz one
    fs::create_directories(dir);
    const std::string ext = gz ? ".gz" : "";
    write_file(dir / ("train-images-idx3-ubyte" + ext), data + 2, split);
    write_file(dir / ("train-labels-idx1-ubyte" + ext), data + 2 + split, size - 2 - split);
    check_mnist(gl::read_mnist_files(dir, gl::MnistSplit::Train));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size < 1) return 0;
    const bool gz = (data[0] & 1) != 0;
    const bool mnist = (data[0] & 2) != 0;
    try {
        if (mnist) fuzz_mnist(gz, data + 1, size - 1);
        else fuzz_idx(gz, data + 1, size - 1);
    } catch (const gl::Error&) {
        // A clear refusal is the right answer to a bad file.
    }
    return 0;
}
