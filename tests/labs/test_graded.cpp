// Record and replay (graded.hpp): what the student's process records is what the checker
// reads back, bit for bit; a record file that is missing, cut short, forged or garbage
// fails the affected tests with a message and never crashes the checker.
#include "graded.hpp"

#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <unistd.h>

#include <bit>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>

#include "base/rng.hpp"
#include "lab_timing.hpp"
#include "ops/ops.hpp"

namespace gl {
namespace {

namespace fs = std::filesystem;

class GradedRecord : public ::testing::Test {
protected:
    void SetUp() override {
        path_ = (fs::temp_directory_path() / ("graded_record_" + std::to_string(::getpid()) + ".bin")).string();
        fs::remove(path_);
    }
    void TearDown() override {
        graded::set_mode_for_testing(graded::Mode::Direct, "");
        fs::remove(path_);
    }
    void compute_mode() { graded::set_mode_for_testing(graded::Mode::Compute, path_); }
    void check_mode() { graded::set_mode_for_testing(graded::Mode::Check, path_); }
    std::string file_bytes() const {
        std::ifstream in(path_, std::ios::binary);
        return std::string(std::istreambuf_iterator<char>(in), {});
    }
    void write_file(const std::string& bytes) const {
        std::ofstream(path_, std::ios::binary | std::ios::trunc) << bytes;
    }
    std::string path_;
};

TEST_F(GradedRecord, DirectModeRunsTheCode) {
    int calls = 0;
    EXPECT_EQ(graded::student<int>("x", [&] { return ++calls; }), 1);
    EXPECT_EQ(calls, 1);
    EXPECT_TRUE(graded::trusted());
}

TEST_F(GradedRecord, EveryTypeComesBackBitExact) {
    const double nan_payload = std::bit_cast<double>(std::uint64_t{0x7ff8'0000'dead'beef});
    const float subnormal = std::numeric_limits<float>::denorm_min() * 3;
    Rng rng(1);
    const Tensor t = rand_uniform({3, 4}, -1, 1, rng, DType::Float64);
    const auto all = [&] {
        return std::tuple<bool, std::int64_t, double, float, std::string, std::vector<int>, std::vector<Tensor>>{
            true, -7, nan_payload, subnormal, std::string("caf\0e", 5), {1, 2, 3},
            {t, Tensor(), zeros({0, 5}, DType::Int32)}};
    };
    using All = decltype(all());
    compute_mode();
    EXPECT_FALSE(graded::trusted());
    const All recorded = graded::student<All>("all", all);
    check_mode();
    bool ran = false;
    const All replayed = graded::student<All>("all", [&] { ran = true; return all(); });
    EXPECT_FALSE(ran) << "check mode must never run the student's code";
    EXPECT_EQ(std::get<0>(replayed), true);
    EXPECT_EQ(std::get<1>(replayed), -7);
    EXPECT_EQ(std::bit_cast<std::uint64_t>(std::get<2>(replayed)), 0x7ff8'0000'dead'beefu);
    EXPECT_EQ(std::bit_cast<std::uint32_t>(std::get<3>(replayed)), std::bit_cast<std::uint32_t>(subnormal));
    EXPECT_EQ(std::get<4>(replayed), std::string("caf\0e", 5));
    EXPECT_EQ(std::get<5>(replayed), (std::vector<int>{1, 2, 3}));
    const auto& tensors = std::get<6>(replayed);
    ASSERT_EQ(tensors.size(), 3u);
    EXPECT_EQ(tensors[0].shape(), t.shape());
    EXPECT_EQ(tensors[0].to_vector<double>(), t.to_vector<double>());
    EXPECT_FALSE(tensors[1].defined());
    EXPECT_EQ(tensors[2].shape(), (Shape{0, 5}));
    EXPECT_EQ(tensors[2].dtype(), DType::Int32);
    EXPECT_EQ(std::get<1>(recorded), -7);
}

TEST_F(GradedRecord, NonContiguousTensorsAreRecordedInLogicalOrder) {
    const Tensor a = from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3});
    compute_mode();
    graded::student<Tensor>("t", [&] { return t(a); });
    check_mode();
    const Tensor back = graded::student<Tensor>("t", [] { return Tensor(); });
    EXPECT_EQ(back.shape(), (Shape{3, 2}));
    EXPECT_EQ(back.to_vector<float>(), (std::vector<float>{1, 4, 2, 5, 3, 6}));
}

TEST_F(GradedRecord, OccurrencesAreKeptApart) {
    compute_mode();
    for (int i = 0; i < 3; ++i) graded::student<int>("same key", [&] { return 10 * i; });
    check_mode();
    for (int i = 0; i < 3; ++i) EXPECT_EQ(graded::student<int>("same key", [] { return -1; }), 10 * i);
}

TEST_F(GradedRecord, StudentExceptionIsReplayedWithItsMessage) {
    compute_mode();
    EXPECT_THROW(graded::student<int>("x", []() -> int { throw std::logic_error("lab 01: not implemented: relu"); }),
                 std::logic_error);
    EXPECT_THROW(graded::student_void("v", [] { throw std::runtime_error("boom"); }), std::runtime_error);
    graded::student_void("fine", [] {});
    check_mode();
    try {
        graded::student<int>("x", [] { return 0; });
        ADD_FAILURE() << "the recorded exception was not rethrown";
    } catch (const std::runtime_error& e) {
        EXPECT_STREQ(e.what(), "lab 01: not implemented: relu");
    }
    EXPECT_THROW(graded::student_void("v", [] {}), std::runtime_error);
    EXPECT_NO_THROW(graded::student_void("fine", [] { throw std::runtime_error("must not run"); }));
}

// A missing record fails the test even where the test expects an exception.
TEST_F(GradedRecord, MissingRecordFailsTheTest) {
    compute_mode();
    graded::student<int>("other", [] { return 1; });
    check_mode();
    EXPECT_NONFATAL_FAILURE(EXPECT_ANY_THROW(graded::student<int>("absent", [] { return 1; })),
                            "recorded no result");
}

TEST_F(GradedRecord, RecordsOfAnotherTestDoNotCount) {
    write_file(std::string("GRADLAB-RECORD 1\n") + "R v 12 1 0 4\nLab01.Other" + "x" + "x" + "\1\0\0\0\n");
    check_mode();
    EXPECT_NONFATAL_FAILURE(EXPECT_ANY_THROW(graded::student<int>("x", [] { return 1; })), "recorded no result");
}

TEST_F(GradedRecord, MissingFileFailsWithAMessage) {
    check_mode();
    EXPECT_NONFATAL_FAILURE(EXPECT_ANY_THROW(graded::student<int>("x", [] { return 1; })), "does not exist");
}

// Cut at every byte: the records before the cut replay, the rest fail; nothing crashes.
TEST_F(GradedRecord, TruncatedFileNeverCrashes) {
    compute_mode();
    graded::student<int>("a", [] { return 41; });
    graded::student<std::vector<Tensor>>("b", [] { return std::vector<Tensor>{ones({2, 2})}; });
    const std::string whole = file_bytes();
    const std::size_t first_record_end = whole.find("\n", whole.find("\n", whole.find("R v")) + 1) + 1;
    for (std::size_t cut = 0; cut < whole.size(); ++cut) {
        write_file(whole.substr(0, cut));
        check_mode();
        if (cut >= first_record_end)
            EXPECT_EQ(graded::student<int>("a", [] { return 0; }), 41) << "cut at " << cut;
        else
            EXPECT_NONFATAL_FAILURE(EXPECT_ANY_THROW(graded::student<int>("a", [] { return 0; })), "");
        EXPECT_NONFATAL_FAILURE(EXPECT_ANY_THROW(graded::student<std::vector<Tensor>>("b", [] {
                                    return std::vector<Tensor>{};
                                })),
                                "");
    }
}

// Forged lengths (a vector of 2^60 elements, a tensor of 2^40 floats) fail before any
// allocation; a payload of the wrong type fails; garbage fails.
TEST_F(GradedRecord, HostilePayloadsFailCleanly) {
    const auto file_with = [&](const std::string& key, const std::string& payload) {
        const std::string test = "GradedRecord.HostilePayloadsFailCleanly";
        write_file("GRADLAB-RECORD 1\nR v " + std::to_string(test.size()) + " " + std::to_string(key.size()) +
                   " 0 " + std::to_string(payload.size()) + "\n" + test + key + payload + "\n");
        check_mode();
    };
    const auto u64 = [](std::uint64_t v) { return std::string(reinterpret_cast<const char*>(&v), 8); };
    file_with("v", u64(std::uint64_t{1} << 60));
    EXPECT_NONFATAL_FAILURE(EXPECT_ANY_THROW(graded::student<std::vector<double>>("v", [] {
                                return std::vector<double>{};
                            })),
                            "more than the");
    file_with("t", std::string("\1\0", 2) + u64(1) + u64(std::uint64_t{1} << 40) + u64(std::uint64_t{1} << 42));
    EXPECT_NONFATAL_FAILURE(EXPECT_ANY_THROW(graded::student<Tensor>("t", [] { return Tensor(); })), "tensor");
    file_with("b", std::string("\7", 1));
    EXPECT_NONFATAL_FAILURE(EXPECT_ANY_THROW(graded::student<bool>("b", [] { return true; })), "neither 0 nor 1");
    file_with("i", u64(5));
    EXPECT_NONFATAL_FAILURE(EXPECT_ANY_THROW(graded::student<int>("i", [] { return 1; })), "bytes more");
    write_file("GRADLAB-RECORD 1\nR v 99999999999999999999 1 0 0\n");
    check_mode();
    EXPECT_NONFATAL_FAILURE(EXPECT_ANY_THROW(graded::student<int>("i", [] { return 1; })), "malformed record header");
    write_file("\x7f" "ELF garbage");
    check_mode();
    EXPECT_NONFATAL_FAILURE(EXPECT_ANY_THROW(graded::student<int>("i", [] { return 1; })), "does not start");
}

TEST_F(GradedRecord, DuplicateRecordIsNotTrusted) {
    compute_mode();
    graded::student<int>("x", [] { return 1; });
    const std::string once = file_bytes();
    write_file(once + once.substr(std::string("GRADLAB-RECORD 1\n").size()));
    check_mode();
    EXPECT_NONFATAL_FAILURE(EXPECT_ANY_THROW(graded::student<int>("x", [] { return 1; })), "recorded twice");
}

}  // namespace
}  // namespace gl

// The timed GEMM chain (lab_timing.hpp): a chain one product shorter ends elsewhere (a
// kernel cannot skip work unseen), and two different correct kernels end within the
// tolerance the timed items allow.
namespace gl {
namespace {

bool same_digest(const std::vector<double>& a, const std::vector<double>& b) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i)
        if (!(std::abs(a[i] - b[i]) <= 1e-3 * std::max(1.0, std::abs(b[i])))) return false;
    return true;
}

TEST(GemmChain, SkippedWorkShowsAndCorrectKernelsAgree) {
    labs::GemmCase c{"naive", "auto", 96, 96, 96, false, false, 1, 6};
    const auto naive = labs::gemm_chain(c);
    c.kernel = "packed_simd";
    EXPECT_TRUE(same_digest(labs::gemm_chain(c), naive)) << "two correct kernels must end where the other does";
    c.reps = 5;
    EXPECT_FALSE(same_digest(labs::gemm_chain(c), naive)) << "a chain one product short must end elsewhere";
    c.reps = 6;
    c.threads = 2;
    c.kernel = "threaded";
    EXPECT_TRUE(same_digest(labs::gemm_chain(c), naive));
}

}  // namespace
}  // namespace gl
