/// @file
/// @brief Whole-file reads and writes for tests that damage files on purpose (truncated,
/// bit-flipped or forged model files).
#pragma once

#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace gl::testkit {

/// Every byte of the file at @p path (empty if it cannot be opened).
inline std::vector<char> read_all(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

/// Replaces the file at @p path with @p bytes.
inline void write_all(const std::string& path, const std::vector<char>& bytes) {
    std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

}  // namespace gl::testkit
