/// @file
/// @brief Reading IDX files, the format MNIST and Fashion-MNIST are distributed in.
///
/// Owns: parsing and validating an IDX file (raw or gzip-compressed) into an array of
/// bytes in host order with its shape and element type. Knows nothing about tensors,
/// images or labels: mnist.hpp gives the arrays their meaning.
///
/// The format: two zero bytes, a type byte, a byte with the number of dimensions, one
/// big-endian uint32 extent per dimension, then the elements, big-endian, row-major.
#pragma once

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <string>
#include <type_traits>
#include <vector>

#include "base/error.hpp"

namespace gl {

/// The element types an IDX file can hold; the value is the type byte of the header.
enum class IdxType : std::uint8_t {
    UInt8 = 0x08,    ///< unsigned byte (MNIST images and labels)
    Int8 = 0x09,     ///< signed byte
    Int16 = 0x0B,    ///< 16-bit signed integer
    Int32 = 0x0C,    ///< 32-bit signed integer
    Float32 = 0x0D,  ///< IEEE 754 single precision
    Float64 = 0x0E,  ///< IEEE 754 double precision
};

/// Bytes one element of @p type occupies.
std::size_t idx_type_size(IdxType type);
/// A short name for messages ("ubyte", "int16", "float32", ...).
std::string idx_type_name(IdxType type);

/// Maps a C++ element type to its IdxType, e.g. idx_type_of<float>() == IdxType::Float32.
template <class T>
constexpr IdxType idx_type_of() {
    if constexpr (std::is_same_v<T, std::uint8_t>) return IdxType::UInt8;
    else if constexpr (std::is_same_v<T, std::int8_t>) return IdxType::Int8;
    else if constexpr (std::is_same_v<T, std::int16_t>) return IdxType::Int16;
    else if constexpr (std::is_same_v<T, std::int32_t>) return IdxType::Int32;
    else if constexpr (std::is_same_v<T, float>) return IdxType::Float32;
    else {
        static_assert(std::is_same_v<T, double>, "IDX files hold only the types of IdxType");
        return IdxType::Float64;
    }
}

/// The contents of an IDX file: its shape, element type, and the elements in host order.
struct IdxArray {
    std::vector<std::int64_t> shape;  ///< extents, outermost first (1 to 8 of them)
    IdxType type = IdxType::UInt8;    ///< element type
    std::vector<std::uint8_t> bytes;  ///< the elements, row-major, converted to host order

    /// Number of elements (the product of the extents).
    std::int64_t numel() const;
    /// Copies the elements out as T; throws if T does not match type.
    template <class T>
    std::vector<T> to_vector() const;
};

/// The largest amount of element data read_idx accepts unless told otherwise (4 GiB):
/// far above any dataset the labs use, far below what a corrupt header can claim.
inline constexpr std::uint64_t kIdxDefaultMaxBytes = std::uint64_t{1} << 32;

/// Reads and validates the IDX file at @p path. A name ending in ".gz" must be a gzip
/// file; other names are read as raw IDX (or, if they happen to be gzip, decompressed).
///
/// Throws gl::Error, with a message that starts with the path and says what is wrong,
/// when the file is missing or unreadable, is not gzip though named .gz, holds a corrupt
/// or cut-short gzip stream, has a bad magic number, an unknown element type, 0 or more
/// than 8 dimensions, extents whose data would exceed @p max_bytes (or 2^64), fewer bytes
/// than the header promises, or bytes after the data. Memory grows only with data
/// actually read, so a lying header cannot make it allocate gigabytes.
IdxArray read_idx(const std::filesystem::path& path, std::uint64_t max_bytes = kIdxDefaultMaxBytes);

template <class T>
std::vector<T> IdxArray::to_vector() const {
    check(type == idx_type_of<T>(), "IdxArray::to_vector: the array holds " + idx_type_name(type) +
                                        ", not " + idx_type_name(idx_type_of<T>()));
    std::vector<T> out(bytes.size() / sizeof(T));
    if (!out.empty()) std::memcpy(out.data(), bytes.data(), out.size() * sizeof(T));
    return out;
}

}  // namespace gl
