#include "data/idx.hpp"

#include <zlib.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cerrno>
#include <cstring>
#include <optional>
#include <system_error>

#include "base/checked_arithmetic.hpp"

namespace gl {

std::size_t idx_type_size(IdxType type) {
    switch (type) {
        case IdxType::UInt8:
        case IdxType::Int8: return 1;
        case IdxType::Int16: return 2;
        case IdxType::Int32:
        case IdxType::Float32: return 4;
        case IdxType::Float64: return 8;
    }
    throw Error("idx_type_size: unknown IdxType " + std::to_string(static_cast<int>(type)));
}

std::string idx_type_name(IdxType type) {
    switch (type) {
        case IdxType::UInt8: return "ubyte";
        case IdxType::Int8: return "int8";
        case IdxType::Int16: return "int16";
        case IdxType::Int32: return "int32";
        case IdxType::Float32: return "float32";
        case IdxType::Float64: return "float64";
    }
    return "unknown";
}

namespace {

/// "60000 x 28 x 28".
std::string extents_str(const std::vector<std::int64_t>& shape) {
    std::string s;
    for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? " x " : "") + std::to_string(shape[i]);
    return s;
}

}  // namespace

std::int64_t IdxArray::numel() const {
    const std::optional<std::int64_t> n = checked_product(shape);
    check(n.has_value(), "IdxArray::numel: the extents " + extents_str(shape) +
                             " hold more than 2^63 elements");
    return *n;
}

namespace {

/// gzread takes an `unsigned` length and the vector grows as data arrives, so data is
/// read in pieces of this size.
constexpr std::size_t kChunkBytes = std::size_t{1} << 20;
/// Headers have at most this many dimensions (the dimension count is a byte, but no
/// dataset uses more, and a bigger count is a sign of a file that is not IDX).
constexpr int kMaxDims = 8;

std::string hex_byte(unsigned value) {
    static const char* digits = "0123456789abcdef";
    return std::string("0x") + digits[(value >> 4) & 0xF] + digits[value & 0xF];
}

bool is_known_type(std::uint8_t byte) {
    return byte == 0x08 || byte == 0x09 || byte == 0x0B || byte == 0x0C || byte == 0x0D ||
           byte == 0x0E;
}

/// A file opened through zlib: gzread decompresses gzip files and passes other files
/// through unchanged, so raw and .gz files share one reading path.
class GzReader {
public:
    explicit GzReader(const std::filesystem::path& path) : where_(path.string() + ": ") {
        errno = 0;
        file_ = gzopen(path.c_str(), "rb");
        if (!file_)
            throw Error(where_ + "cannot open the file: " +
                        (errno ? std::strerror(errno) : "out of memory") +
                        "; check that it is readable");
        gzbuffer(file_, 1u << 17);  // fewer system calls than zlib's default 8 KiB
    }
    GzReader(const GzReader&) = delete;
    GzReader& operator=(const GzReader&) = delete;
    ~GzReader() { gzclose(file_); }

    /// True when the file is not gzip-compressed (zlib copies it through as is).
    bool direct() { return gzdirect(file_) == 1; }

    /// Reads up to @p n bytes; fewer only at the end of the data. Throws on a corrupt or
    /// cut-short gzip stream and on I/O errors.
    std::size_t read(void* dst, std::size_t n) {
        std::size_t done = 0;
        while (done < n) {
            const auto want = static_cast<unsigned>(std::min(n - done, kChunkBytes));
            const int got = gzread(file_, static_cast<char*>(dst) + done, want);
            if (got < 0) throw_stream_error();
            if (got == 0) break;
            done += static_cast<std::size_t>(got);
        }
        if (done < n) check_clean_end();
        return done;
    }

private:
    // zlib reports a gzip stream that stops mid-way as Z_BUF_ERROR at the end of the data,
    // not as a failed read: without this check a cut-short download would look like a
    // short IDX file.
    void check_clean_end() {
        int code = Z_OK;
        const std::string message = zlib_message(code);
        if (code == Z_BUF_ERROR)
            throw Error(where_ + "the gzip stream is cut short (zlib: " + message +
                        "); the .gz file is incomplete, download it again");
        if (code != Z_OK) throw_stream_error();
    }

    /// zlib's message for the last error, without the "path: " zlib puts in front.
    std::string zlib_message(int& code) {
        const std::string message = gzerror(file_, &code);
        return message.starts_with(where_) ? message.substr(where_.size()) : message;
    }

    [[noreturn]] void throw_stream_error() {
        int code = Z_OK;
        const std::string message = zlib_message(code);
        if (code == Z_ERRNO)
            throw Error(where_ + "read error: " + std::strerror(errno));
        throw Error(where_ + "corrupt gzip stream (zlib: " + message +
                    "); the .gz file is damaged, download it again");
    }

    std::string where_;
    gzFile file_ = nullptr;
};

/// What the header says: element type, shape, and the size of the data that follows.
struct IdxHeader {
    IdxType type = IdxType::UInt8;
    std::vector<std::int64_t> shape;
    std::uint64_t header_bytes = 0;  ///< 4 magic bytes + 4 per extent
    std::uint64_t data_bytes = 0;    ///< elements times element size
};

/// "60000 x 28 x 28 = 47040000 bytes", or with the element size when it is not 1.
std::string describe_data(const IdxHeader& h) {
    std::string s = extents_str(h.shape);
    const std::size_t elem = idx_type_size(h.type);
    if (elem != 1) s += " elements of " + std::to_string(elem) + " bytes";
    return s + " = " + std::to_string(h.data_bytes) + " bytes";
}

/// Reads the 4-byte magic number: checks the zero bytes, the type and the dimension count.
IdxHeader read_magic(GzReader& in, const std::string& where) {
    std::array<std::uint8_t, 4> magic{};
    const std::size_t got = in.read(magic.data(), magic.size());
    if (got < magic.size())
        throw Error(where + "too short to be an IDX file: it holds " + std::to_string(got) +
                    " bytes, the magic number alone needs 4");
    if (magic[0] != 0 || magic[1] != 0)
        throw Error(where + "bad magic number: an IDX file starts with two zero bytes, this one "
                    "with " + hex_byte(magic[0]) + " " + hex_byte(magic[1]) +
                    "; is it really an IDX file?");
    if (!is_known_type(magic[2]))
        throw Error(where + "unknown element type " + hex_byte(magic[2]) +
                    " in the magic number; IDX types are 0x08 (ubyte), 0x09 (int8), "
                    "0x0b (int16), 0x0c (int32), 0x0d (float32) and 0x0e (float64)");
    if (magic[3] == 0 || magic[3] > kMaxDims)
        throw Error(where + "the header declares " + std::to_string(magic[3]) +
                    " dimensions; gradlab reads IDX arrays of 1 to " + std::to_string(kMaxDims));
    IdxHeader h;
    h.type = static_cast<IdxType>(magic[2]);
    h.shape.resize(magic[3]);
    h.header_bytes = 4 + 4 * std::uint64_t{magic[3]};
    return h;
}

/// Bytes of data @p h promises, or throws when that overflows 64 bits or exceeds
/// @p max_bytes (both mean the header is almost certainly corrupt).
std::uint64_t promised_bytes(const IdxHeader& h, std::uint64_t max_bytes, const std::string& where) {
    const std::string extents = extents_str(h.shape);
    // The element size is one more factor; an empty array is fine even if the other
    // extents are huge (checked_product gives 0).
    std::vector<std::uint64_t> factors{idx_type_size(h.type)};
    for (auto extent : h.shape) factors.push_back(static_cast<std::uint64_t>(extent));
    const std::optional<std::uint64_t> product = checked_product(factors);
    if (!product)
        throw Error(where + "the extents " + extents + " (" + idx_type_name(h.type) +
                    ") give more than 2^64 bytes of data; the header is corrupt");
    const std::uint64_t total = *product;
    if (total > max_bytes)
        throw Error(where + "the header promises " + extents + " " + idx_type_name(h.type) +
                    " elements = " + std::to_string(total) + " bytes of data, more than the limit "
                    "of " + std::to_string(max_bytes) + " bytes; the header is probably corrupt "
                    "(if the file really is that large, pass a larger max_bytes to read_idx)");
    return total;
}

/// Reads the extents after the magic number and sizes the data.
void read_extents(GzReader& in, IdxHeader& h, std::uint64_t max_bytes, const std::string& where) {
    std::vector<std::uint8_t> raw(4 * h.shape.size());
    const std::size_t got = in.read(raw.data(), raw.size());
    if (got < raw.size())
        throw Error(where + "truncated header: it declares " + std::to_string(h.shape.size()) +
                    " dimensions, whose extents need " + std::to_string(raw.size()) +
                    " bytes after the magic number; the file holds " + std::to_string(got));
    for (std::size_t d = 0; d < h.shape.size(); ++d) {
        const std::uint8_t* b = &raw[4 * d];  // big-endian uint32
        h.shape[d] = (std::int64_t{b[0]} << 24) | (std::int64_t{b[1]} << 16) |
                     (std::int64_t{b[2]} << 8) | std::int64_t{b[3]};
    }
    h.data_bytes = promised_bytes(h, max_bytes, where);
}

[[noreturn]] void throw_truncated(const IdxHeader& h, std::uint64_t held, const std::string& where) {
    throw Error(where + "truncated: the header promises " + describe_data(h) +
                " of data, the file holds " + std::to_string(held));
}

[[noreturn]] void throw_trailing(const IdxHeader& h, std::uint64_t extra, const std::string& where) {
    throw Error(where + "trailing garbage: " + std::to_string(extra) + " more bytes follow the " +
                describe_data(h) + " of data the header promises; the file is not a clean "
                "IDX file (two files concatenated? a wrong header?)");
}

/// For an uncompressed file the size on disk tells up front whether the data fits the
/// header, before anything is allocated.
void check_raw_size(const IdxHeader& h, std::uint64_t file_bytes, const std::string& where) {
    const std::uint64_t held = file_bytes - h.header_bytes;
    if (held < h.data_bytes) throw_truncated(h, held, where);
    if (held > h.data_bytes) throw_trailing(h, held - h.data_bytes, where);
}

/// Reads exactly h.data_bytes, growing the buffer with what arrives: a gzip header cannot
/// be checked against the file size, and must not make us allocate what it claims.
std::vector<std::uint8_t> read_data(GzReader& in, const IdxHeader& h, const std::string& where) {
    std::vector<std::uint8_t> bytes;
    std::uint64_t have = 0;
    while (have < h.data_bytes) {
        const auto want = static_cast<std::size_t>(std::min<std::uint64_t>(h.data_bytes - have, kChunkBytes));
        bytes.resize(static_cast<std::size_t>(have) + want);
        const std::size_t got = in.read(bytes.data() + have, want);
        have += got;
        if (got < want) throw_truncated(h, have, where);
    }
    return bytes;
}

/// Throws if anything follows the data, saying how much.
void check_end(GzReader& in, const IdxHeader& h, const std::string& where) {
    std::array<std::uint8_t, 1 << 16> sink{};
    std::uint64_t extra = 0;
    for (std::size_t got; (got = in.read(sink.data(), sink.size())) > 0;) {
        extra += got;
        if (got < sink.size()) break;
    }
    if (extra > 0) throw_trailing(h, extra, where);
}

/// IDX stores every element big-endian; flip each element's bytes on little-endian hosts.
void to_host_order(std::vector<std::uint8_t>& bytes, std::size_t elem) {
    if constexpr (std::endian::native == std::endian::big) return;
    if (elem == 1) return;
    for (std::size_t i = 0; i + elem <= bytes.size(); i += elem)
        std::reverse(bytes.begin() + static_cast<std::ptrdiff_t>(i),
                     bytes.begin() + static_cast<std::ptrdiff_t>(i + elem));
}

/// Checks what can be checked before opening: existence, type and size of the file.
std::uint64_t check_file(const std::filesystem::path& path, const std::string& where) {
    std::error_code ec;
    const auto status = std::filesystem::status(path, ec);
    if (status.type() == std::filesystem::file_type::not_found)
        throw Error(where + "no such file; check the path");
    if (ec) throw Error(where + "cannot access the file: " + ec.message());
    if (!std::filesystem::is_regular_file(status))
        throw Error(where + "not a regular file (a directory?); give the path of an IDX file");
    const std::uint64_t size = std::filesystem::file_size(path, ec);
    if (ec) throw Error(where + "cannot read the file size: " + ec.message());
    if (size == 0) throw Error(where + "the file is empty (0 bytes); expected an IDX file");
    return size;
}

bool named_gz(const std::filesystem::path& path) { return path.extension() == ".gz"; }

}  // namespace

IdxArray read_idx(const std::filesystem::path& path, std::uint64_t max_bytes) {
    const std::string where = path.string() + ": ";
    const std::uint64_t file_bytes = check_file(path, where);
    GzReader in(path);
    const bool direct = in.direct();
    if (direct && named_gz(path))
        throw Error(where + "named .gz but not gzip-compressed (it does not start with the "
                    "gzip signature 1f 8b); if it is a raw IDX file, drop .gz from its name");

    IdxHeader header = read_magic(in, where);
    read_extents(in, header, max_bytes, where);
    if (direct) check_raw_size(header, file_bytes, where);

    IdxArray out;
    out.type = header.type;
    out.shape = header.shape;
    out.bytes = read_data(in, header, where);
    check_end(in, header, where);
    to_host_order(out.bytes, idx_type_size(out.type));
    return out;
}

}  // namespace gl
