/// @file
/// @brief Test support: a temporary folder and small IDX files written into it, raw or
/// gzipped, including deliberately broken ones.
#pragma once

#include <gtest/gtest.h>
#include <zlib.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace gl::test {

/// Raw bytes of a file.
using Bytes = std::vector<std::uint8_t>;

/// A fresh folder under the system temp folder, removed with everything in it at the end.
class TempDir {
public:
    TempDir() {
        std::string pattern = (std::filesystem::temp_directory_path() / "gradlab-test-XXXXXX").string();
        if (!mkdtemp(pattern.data())) throw std::runtime_error("mkdtemp failed for " + pattern);
        path_ = pattern;
    }
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;
    ~TempDir() {
        std::error_code ec;
        std::filesystem::remove_all(path_, ec);
    }
    /// The folder.
    const std::filesystem::path& path() const { return path_; }
    /// A path inside the folder.
    std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

private:
    std::filesystem::path path_;
};

/// The IDX header: two zero bytes, the type byte, the dimension count, big-endian extents.
inline Bytes idx_header(std::uint8_t type, const std::vector<std::uint32_t>& extents) {
    Bytes out{0, 0, type, static_cast<std::uint8_t>(extents.size())};
    for (std::uint32_t e : extents)
        for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<std::uint8_t>(e >> shift));
    return out;
}

/// A header followed by @p data (already big-endian).
inline Bytes idx_file(std::uint8_t type, const std::vector<std::uint32_t>& extents, const Bytes& data) {
    Bytes out = idx_header(type, extents);
    out.insert(out.end(), data.begin(), data.end());
    return out;
}

/// Writes @p bytes as they are.
inline void write_raw(const std::filesystem::path& path, const Bytes& bytes) {
    std::ofstream f(path, std::ios::binary);
    f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    ASSERT_TRUE(f.good()) << "could not write " << path;
}

/// Writes @p bytes gzip-compressed, through zlib like gzip(1) would.
inline void write_gz(const std::filesystem::path& path, const Bytes& bytes) {
    gzFile f = gzopen(path.c_str(), "wb");
    ASSERT_NE(f, nullptr) << "could not create " << path;
    if (!bytes.empty()) {
        EXPECT_EQ(gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())),
                  static_cast<int>(bytes.size()));
    }
    EXPECT_EQ(gzclose(f), Z_OK);
}

/// The bytes of a file (to damage a gzip file on purpose).
inline Bytes read_raw(const std::filesystem::path& path) {
    std::ifstream f(path, std::ios::binary);
    return Bytes(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

}  // namespace gl::test
