// Unit tests of the IDX reader (core/data/idx.hpp): good files of every element type,
// raw and gzipped, and every way a file can be broken. Each error must name the file and
// say what is wrong.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bit>
#include <cstring>

#include "data/idx.hpp"
#include "idx_fixtures.hpp"
#include "thrown_message.hpp"

namespace gl::test {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

/// The big-endian bytes of @p values, written out by shifts (independent of the host).
template <class T>
Bytes big_endian(const std::vector<T>& values) {
    Bytes out;
    for (T v : values) {
        std::uint64_t bits = 0;
        std::memcpy(&bits, &v, sizeof(T));  // little end of bits = the value's bytes on LE
        if constexpr (std::endian::native == std::endian::big) bits >>= 8 * (8 - sizeof(T));
        for (int shift = 8 * static_cast<int>(sizeof(T)) - 8; shift >= 0; shift -= 8)
            out.push_back(static_cast<std::uint8_t>(bits >> shift));
    }
    return out;
}

TEST(IdxRead, ReadsRawUbyteFile) {
    TempDir dir;
    write_raw(dir / "images-idx3-ubyte", idx_file(0x08, {2, 1, 3}, {0, 1, 2, 253, 254, 255}));
    const IdxArray a = read_idx(dir / "images-idx3-ubyte");
    EXPECT_EQ(a.type, IdxType::UInt8);
    EXPECT_EQ(a.shape, (std::vector<std::int64_t>{2, 1, 3}));
    EXPECT_EQ(a.numel(), 6);
    EXPECT_EQ(a.bytes, (Bytes{0, 1, 2, 253, 254, 255}));
}

TEST(IdxRead, ReadsGzippedUbyteFile) {
    TempDir dir;
    write_gz(dir / "labels-idx1-ubyte.gz", idx_file(0x08, {4}, {9, 0, 3, 7}));
    const IdxArray a = read_idx(dir / "labels-idx1-ubyte.gz");
    EXPECT_EQ(a.shape, (std::vector<std::int64_t>{4}));
    EXPECT_EQ(a.to_vector<std::uint8_t>(), (std::vector<std::uint8_t>{9, 0, 3, 7}));
}

TEST(IdxRead, DecompressesGzipContentUnderARawName) {
    TempDir dir;
    write_gz(dir / "labels-idx1-ubyte", idx_file(0x08, {2}, {5, 6}));
    EXPECT_EQ(read_idx(dir / "labels-idx1-ubyte").bytes, (Bytes{5, 6}));
}

TEST(IdxRead, ReadsAnEmptyArray) {
    TempDir dir;
    write_raw(dir / "empty-idx2", idx_file(0x08, {0, 28}, {}));
    const IdxArray a = read_idx(dir / "empty-idx2");
    EXPECT_EQ(a.shape, (std::vector<std::int64_t>{0, 28}));
    EXPECT_TRUE(a.bytes.empty());
}

TEST(IdxRead, ConvertsBigEndianInt16ToHostOrder) {
    // Written by hand, not by big_endian(), so the test does not share a bug with it.
    TempDir dir;
    write_raw(dir / "a.idx", idx_file(0x0B, {2}, {0xFF, 0xFE, 0x01, 0x02}));
    EXPECT_EQ(read_idx(dir / "a.idx").to_vector<std::int16_t>(), (std::vector<std::int16_t>{-2, 258}));
}

/// Every element type, raw and gzipped, comes back with its values.
class IdxTypes : public ::testing::TestWithParam<bool> {
protected:
    template <class T>
    void round_trip(std::uint8_t type_byte, const std::vector<T>& values) {
        const auto path = dir_ / (GetParam() ? "a.idx.gz" : "a.idx");
        const Bytes file = idx_file(type_byte, {static_cast<std::uint32_t>(values.size()), 1},
                                    big_endian(values));
        GetParam() ? write_gz(path, file) : write_raw(path, file);
        const IdxArray a = read_idx(path);
        EXPECT_EQ(a.type, idx_type_of<T>());
        EXPECT_EQ(a.shape, (std::vector<std::int64_t>{static_cast<std::int64_t>(values.size()), 1}));
        EXPECT_EQ(a.bytes.size(), values.size() * idx_type_size(a.type));
        EXPECT_EQ(a.to_vector<T>(), values);
    }
    TempDir dir_;
};

TEST_P(IdxTypes, Ubyte) { round_trip<std::uint8_t>(0x08, {0, 128, 255}); }
TEST_P(IdxTypes, Int8) { round_trip<std::int8_t>(0x09, {-128, -3, 0, 127}); }
TEST_P(IdxTypes, Int16) { round_trip<std::int16_t>(0x0B, {-32768, -2, 258, 32767}); }
TEST_P(IdxTypes, Int32) { round_trip<std::int32_t>(0x0C, {-1, 0x01020304, INT32_MIN}); }
TEST_P(IdxTypes, Float32) { round_trip<float>(0x0D, {1.5f, -2.0f, 3.25e-7f}); }
TEST_P(IdxTypes, Float64) { round_trip<double>(0x0E, {-2.25, 1e300, 0.1}); }

INSTANTIATE_TEST_SUITE_P(RawAndGz, IdxTypes, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "gz" : "raw"; });

TEST(IdxRead, ToVectorRejectsTheWrongType) {
    TempDir dir;
    write_raw(dir / "a.idx", idx_file(0x08, {1}, {7}));
    EXPECT_THAT(thrown_message([&] { read_idx(dir / "a.idx").to_vector<float>(); }),
                HasSubstr("holds ubyte, not float32"));
}

// ---------------------------------------------------------------------------------------
// Broken contents: each case fails the same way raw and gzipped.

struct BrokenCase {
    std::string name;
    Bytes bytes;
    std::vector<std::string> expected;  ///< substrings the message must contain
};

std::vector<BrokenCase> broken_cases() {
    Bytes nine_dims = idx_header(0x08, {1, 1, 1, 1, 1, 1, 1, 1, 1});
    nine_dims.push_back(0);
    return {
        {"too_short", {0, 0, 8}, {"too short to be an IDX file", "holds 3 bytes"}},
        {"bad_magic", {1, 2, 8, 1, 0, 0, 0, 1, 7}, {"bad magic number", "0x01 0x02"}},
        {"unknown_type", idx_file(0x07, {1}, {0}), {"unknown element type 0x07"}},
        {"zero_dims", {0, 0, 8, 0}, {"declares 0 dimensions", "1 to 8"}},
        {"nine_dims", nine_dims, {"declares 9 dimensions", "1 to 8"}},
        {"truncated_header", {0, 0, 8, 3, 0, 0, 0, 2, 0, 0},
         {"truncated header", "declares 3 dimensions", "need 12 bytes", "holds 6"}},
        {"overflowing_extents",
         idx_header(0x08, {0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF,
                           0xFFFFFFFF, 0xFFFFFFFF}),
         {"more than 2^64 bytes", "header is corrupt"}},
        {"absurd_extents", idx_file(0x08, {100000, 100000, 100000}, {1, 2, 3}),
         {"100000 x 100000 x 100000 ubyte elements = 1000000000000000 bytes",
          "more than the limit of 4294967296 bytes"}},
        {"truncated_data", idx_file(0x08, {10, 28, 28}, Bytes(1000, 7)),
         {"truncated: the header promises 10 x 28 x 28 = 7840 bytes of data, the file holds 1000"}},
        {"truncated_int32_data", idx_file(0x0C, {2, 3}, Bytes(20, 0)),
         {"truncated: the header promises 2 x 3 elements of 4 bytes = 24 bytes of data, "
          "the file holds 20"}},
        // Below the size limit, but a lie: the reader must not allocate 3 GB to find out.
        {"lying_header", idx_file(0x08, {3000, 1000, 1000}, Bytes(10, 1)),
         {"3000 x 1000 x 1000 = 3000000000 bytes of data, the file holds 10"}},
        {"trailing_garbage", idx_file(0x08, {2, 3}, Bytes(11, 1)),
         {"trailing garbage: 5 more bytes follow the 2 x 3 = 6 bytes of data"}},
    };
}

class IdxBroken : public ::testing::TestWithParam<std::tuple<BrokenCase, bool>> {};

TEST_P(IdxBroken, ErrorNamesTheFileAndTheProblem) {
    const auto& [c, gz] = GetParam();
    TempDir dir;
    const auto path = dir / (gz ? "broken-idx.gz" : "broken-idx");
    gz ? write_gz(path, c.bytes) : write_raw(path, c.bytes);
    const std::string message = thrown_message([&] { read_idx(path); });
    EXPECT_THAT(message, HasSubstr(path.string() + ": "));
    for (const auto& expected : c.expected) EXPECT_THAT(message, HasSubstr(expected));
}

INSTANTIATE_TEST_SUITE_P(Cases, IdxBroken,
                         ::testing::Combine(::testing::ValuesIn(broken_cases()), ::testing::Bool()),
                         [](const auto& info) {
                             return std::get<0>(info.param).name + (std::get<1>(info.param) ? "_gz" : "_raw");
                         });

TEST(IdxRead, HugeExtentsAroundAZeroAreAnEmptyArray) {
    TempDir dir;
    write_raw(dir / "a.idx", idx_header(0x0E, {0xFFFFFFFF, 0xFFFFFFFF, 0}));
    const IdxArray a = read_idx(dir / "a.idx");
    EXPECT_EQ(a.numel(), 0);
    EXPECT_TRUE(a.bytes.empty());
}

TEST(IdxArray, NumelOfExtentsBeyondInt64IsAnError) {
    IdxArray a;
    a.shape = {0xFFFFFFFF, 0xFFFFFFFF};
    EXPECT_THAT(thrown_message([&] { a.numel(); }),
                HasSubstr("4294967295 x 4294967295 hold more than 2^63 elements"));
}

TEST(IdxRead, MaxBytesIsAdjustable) {
    TempDir dir;
    write_raw(dir / "a.idx", idx_file(0x08, {4, 4}, Bytes(16, 0)));
    EXPECT_EQ(read_idx(dir / "a.idx", 16).bytes.size(), 16u);
    EXPECT_THAT(thrown_message([&] { read_idx(dir / "a.idx", 15); }),
                HasSubstr("more than the limit of 15 bytes"));
}

// ---------------------------------------------------------------------------------------
// Broken files: missing, unreadable, not gzip, damaged gzip.

TEST(IdxFile, MissingFile) {
    TempDir dir;
    const auto path = dir / "train-images-idx3-ubyte.gz";
    EXPECT_THAT(thrown_message([&] { read_idx(path); }),
                AllOf(HasSubstr(path.string()), HasSubstr("no such file")));
}

TEST(IdxFile, FolderInsteadOfFile) {
    TempDir dir;
    EXPECT_THAT(thrown_message([&] { read_idx(dir.path()); }),
                AllOf(HasSubstr(dir.path().string()), HasSubstr("not a regular file")));
}

TEST(IdxFile, EmptyFile) {
    TempDir dir;
    write_raw(dir / "empty.gz", {});
    EXPECT_THAT(thrown_message([&] { read_idx(dir / "empty.gz"); }),
                AllOf(HasSubstr((dir / "empty.gz").string()), HasSubstr("the file is empty")));
}

TEST(IdxFile, UnreadableFile) {
    TempDir dir;
    const auto path = dir / "secret-idx";
    write_raw(path, idx_file(0x08, {1}, {1}));
    chmod(path.c_str(), 0);
    if (access(path.c_str(), R_OK) == 0)
        GTEST_SKIP() << "running with privileges that ignore file permissions (root?)";
    EXPECT_THAT(thrown_message([&] { read_idx(path); }),
                AllOf(HasSubstr(path.string()), HasSubstr("cannot open the file"),
                      HasSubstr("Permission denied")));
}

TEST(IdxFile, NamedGzButNotGzip) {
    TempDir dir;
    const auto path = dir / "train-labels-idx1-ubyte.gz";
    write_raw(path, idx_file(0x08, {2}, {1, 2}));
    EXPECT_THAT(thrown_message([&] { read_idx(path); }),
                AllOf(HasSubstr(path.string()), HasSubstr("named .gz but not gzip-compressed")));
}

/// A gzip file of a valid IDX array, big enough to span several deflate blocks.
Bytes valid_gz_bytes(const TempDir& dir) {
    Bytes data(20000);
    for (std::size_t i = 0; i < data.size(); ++i) data[i] = static_cast<std::uint8_t>((i * 7919) >> 3);
    write_gz(dir / "valid.gz", idx_file(0x08, {20, 1000}, data));
    return read_raw(dir / "valid.gz");
}

TEST(IdxFile, GzipWithWrongChecksum) {
    TempDir dir;
    Bytes gz = valid_gz_bytes(dir);
    gz[gz.size() - 8] ^= 0xFF;  // the CRC-32 of the trailer
    write_raw(dir / "bad-crc.gz", gz);
    EXPECT_THAT(thrown_message([&] { read_idx(dir / "bad-crc.gz"); }),
                AllOf(HasSubstr((dir / "bad-crc.gz").string()), HasSubstr("corrupt gzip stream")));
}

TEST(IdxFile, GzipWithGarbledDeflateData) {
    TempDir dir;
    Bytes gz = valid_gz_bytes(dir);
    for (std::size_t i = 10; i < gz.size() - 8; ++i) gz[i] = 0xFF;  // keep the 10-byte gzip header
    write_raw(dir / "garbled.gz", gz);
    EXPECT_THAT(thrown_message([&] { read_idx(dir / "garbled.gz"); }),
                AllOf(HasSubstr((dir / "garbled.gz").string()), HasSubstr("corrupt gzip stream")));
}

TEST(IdxFile, GzipCutShort) {
    TempDir dir;
    Bytes gz = valid_gz_bytes(dir);
    gz.resize(gz.size() / 2);  // an interrupted download
    write_raw(dir / "cut.gz", gz);
    EXPECT_THAT(thrown_message([&] { read_idx(dir / "cut.gz"); }),
                AllOf(HasSubstr((dir / "cut.gz").string()), HasSubstr("gzip stream is cut short")));
}

TEST(IdxFile, GzipCutInsideTheTrailer) {
    TempDir dir;
    Bytes gz = valid_gz_bytes(dir);
    ASSERT_GT(gz.size(), 18u) << "a gzip stream has a 10-byte header and an 8-byte trailer";
    // All the data is there, the checksum is not. (erase, not resize: at -O1 GCC cannot
    // see that resize only shrinks here and warns of a 2^64-byte fill in its grow path.)
    gz.erase(gz.end() - 3, gz.end());
    write_raw(dir / "cut-trailer.gz", gz);
    EXPECT_THAT(thrown_message([&] { read_idx(dir / "cut-trailer.gz"); }),
                HasSubstr("gzip stream is cut short"));
}

}  // namespace
}  // namespace gl::test
