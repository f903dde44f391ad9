/// @file
/// @brief CRC-32 (the IEEE polynomial of zlib, PNG and Ethernet), for the checksums in
/// saved files: a flipped bit or a torn write changes it.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

namespace gl {

/// CRC-32 of @p n bytes at @p data, continuing from @p crc (0 to start).
inline std::uint32_t crc32(const void* data, std::size_t n, std::uint32_t crc = 0) {
    static const std::array<std::uint32_t, 256> table = [] {
        std::array<std::uint32_t, 256> t{};
        for (std::uint32_t i = 0; i < 256; ++i) {
            std::uint32_t c = i;
            for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;  // reflected polynomial
            t[i] = c;
        }
        return t;
    }();
    const auto* p = static_cast<const std::uint8_t*>(data);
    crc = ~crc;
    for (std::size_t i = 0; i < n; ++i) crc = table[(crc ^ p[i]) & 0xFF] ^ (crc >> 8);
    return ~crc;
}

}  // namespace gl
