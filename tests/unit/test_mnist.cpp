// Unit tests of the MNIST-format loader (core/data/mnist.hpp) on small folders written by
// the tests, and on the real Fashion-MNIST test split when it is installed.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <array>

#include "data/mnist.hpp"
#include "idx_fixtures.hpp"
#include "thrown_message.hpp"

namespace gl::test {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

/// A folder with a 5-example train split of 4 x 3 images (raw files) and a 3-example
/// test split of 2 x 2 images (gzipped), like the real dataset's layout.
class MnistFolder : public ::testing::Test {
protected:
    void SetUp() override {
        Bytes train_pixels(5 * 4 * 3);
        for (std::size_t i = 0; i < train_pixels.size(); ++i) train_pixels[i] = static_cast<std::uint8_t>(i * 4);
        train_pixels[0] = 255;
        write_raw(dir_ / "train-images-idx3-ubyte", idx_file(0x08, {5, 4, 3}, train_pixels));
        write_raw(dir_ / "train-labels-idx1-ubyte", idx_file(0x08, {5}, {9, 0, 1, 2, 3}));
        write_gz(dir_ / "t10k-images-idx3-ubyte.gz", idx_file(0x08, {3, 2, 2}, Bytes(12, 51)));
        write_gz(dir_ / "t10k-labels-idx1-ubyte.gz", idx_file(0x08, {3}, {4, 5, 6}));
    }
    TempDir dir_;
};

TEST_F(MnistFolder, LoadsTheRawTrainSplitNormalised) {
    const MnistDataset train(dir_.path(), MnistSplit::Train);
    EXPECT_EQ(train.size(), 5u);
    EXPECT_EQ(train.image_height(), 4);
    EXPECT_EQ(train.image_width(), 3);
    EXPECT_EQ(train.example_shape(), (Shape{12}));
    EXPECT_EQ(train.num_classes(), 10);
    EXPECT_EQ(train.inputs().shape(), (Shape{5, 12}));
    EXPECT_EQ(train.inputs().dtype(), DType::Float32);
    EXPECT_EQ(train.targets().to_vector<std::int32_t>(), (std::vector<std::int32_t>{9, 0, 1, 2, 3}));
    EXPECT_NEAR(train.inputs().at({0, 0}), (1.0 - 0.2860) / 0.3530, 1e-5);        // pixel 255
    EXPECT_NEAR(train.inputs().at({0, 1}), (4 / 255.0 - 0.2860) / 0.3530, 1e-5);  // pixel 4
}

TEST_F(MnistFolder, LoadsTheGzippedTestSplitWithoutNormalisation) {
    const MnistDataset test(dir_.path(), MnistSplit::Test, {.normalize = false});
    EXPECT_EQ(test.inputs().shape(), (Shape{3, 4}));
    for (float x : test.inputs().to_vector<float>()) EXPECT_FLOAT_EQ(x, 0.2f);  // 51 / 255
    EXPECT_EQ(test.targets().to_vector<std::int32_t>(), (std::vector<std::int32_t>{4, 5, 6}));
}

TEST_F(MnistFolder, UsesTheGivenMeanAndStd) {
    const MnistDataset test(dir_.path(), MnistSplit::Test, {.mean = 0.5f, .stddev = 0.25f});
    EXPECT_FLOAT_EQ(static_cast<float>(test.inputs().at({2, 3})), (0.2f - 0.5f) / 0.25f);
}

TEST_F(MnistFolder, RejectsANonPositiveStd) {
    EXPECT_THAT(thrown_message([&] { MnistDataset{dir_.path(), MnistSplit::Test, {.stddev = 0.0f}}; }),
                HasSubstr("stddev must be positive"));
}

TEST(Mnist, MissingFolderSuggestsDataFlagAndDebianPackage) {
    TempDir dir;
    const auto missing = dir / "no-such-folder";
    EXPECT_THAT(thrown_message([&] { MnistDataset{missing, MnistSplit::Train}; }),
                AllOf(HasSubstr(missing.string() + " does not exist"), HasSubstr("--data DIR"),
                      HasSubstr("dataset-fashion-mnist"),
                      HasSubstr("/usr/share/datasets/fashion-mnist")));
}

TEST_F(MnistFolder, MissingFileNamesWhatItLookedFor) {
    std::filesystem::remove(dir_ / "t10k-labels-idx1-ubyte.gz");
    EXPECT_THAT(thrown_message([&] { MnistDataset{dir_.path(), MnistSplit::Test}; }),
                AllOf(HasSubstr(dir_.path().string()),
                      HasSubstr("neither t10k-labels-idx1-ubyte nor t10k-labels-idx1-ubyte.gz"),
                      HasSubstr("--data DIR")));
}

TEST_F(MnistFolder, CountsMustMatch) {
    write_raw(dir_ / "train-labels-idx1-ubyte", idx_file(0x08, {4}, {1, 2, 3, 4}));
    EXPECT_THAT(thrown_message([&] { MnistDataset{dir_.path(), MnistSplit::Train}; }),
                AllOf(HasSubstr((dir_ / "train-labels-idx1-ubyte").string()), HasSubstr("4 labels"),
                      HasSubstr("holds 5 images")));
}

TEST_F(MnistFolder, LabelOutOfRangeNamesTheIndex) {
    write_raw(dir_ / "train-labels-idx1-ubyte", idx_file(0x08, {5}, {1, 2, 12, 4, 5}));
    EXPECT_THAT(thrown_message([&] { MnistDataset{dir_.path(), MnistSplit::Train}; }),
                AllOf(HasSubstr((dir_ / "train-labels-idx1-ubyte").string()),
                      HasSubstr("label 12 at index 2 is out of range 0..9")));
}

TEST_F(MnistFolder, ImagesMustBeThreeDimensional) {
    write_raw(dir_ / "train-images-idx3-ubyte", idx_file(0x08, {5, 12}, Bytes(60, 0)));
    EXPECT_THAT(thrown_message([&] { MnistDataset{dir_.path(), MnistSplit::Train}; }),
                AllOf(HasSubstr("train-images-idx3-ubyte"), HasSubstr("must be N x H x W")));
}

TEST_F(MnistFolder, ASplitWithoutImagesIsRejected) {
    write_gz(dir_ / "t10k-images-idx3-ubyte.gz", idx_file(0x08, {0, 2, 2}, {}));
    write_gz(dir_ / "t10k-labels-idx1-ubyte.gz", idx_file(0x08, {0}, {}));
    EXPECT_THAT(thrown_message([&] { MnistDataset{dir_.path(), MnistSplit::Test}; }),
                AllOf(HasSubstr("t10k-images-idx3-ubyte.gz"), HasSubstr("holds 0 images"),
                      HasSubstr("needs at least one")));
}

TEST_F(MnistFolder, NoImagesOfAHugeSizeIsRejectedBeforeThePixelCount) {
    // An empty array passes read_idx whatever its other extents; H x W = (2^32 - 1)^2
    // overflows int64 and once made a model with a nonsense input size.
    write_raw(dir_ / "train-images-idx3-ubyte", idx_header(0x08, {0, 0xFFFFFFFF, 0xFFFFFFFF}));
    write_raw(dir_ / "train-labels-idx1-ubyte", idx_header(0x08, {0}));
    EXPECT_THAT(thrown_message([&] { MnistDataset{dir_.path(), MnistSplit::Train}; }),
                HasSubstr("holds 0 images"));
}

TEST_F(MnistFolder, FilesAreCheckedWithoutTensors) {
    const MnistFiles f = read_mnist_files(dir_.path(), MnistSplit::Train);
    EXPECT_EQ(f.count, 5);
    EXPECT_EQ(f.pixels_per_image, 12);
    EXPECT_EQ(f.images.bytes.size(), 60u);
    EXPECT_EQ(f.labels.bytes, (Bytes{9, 0, 1, 2, 3}));
}

TEST_F(MnistFolder, LabelsMustBeBytes) {
    write_raw(dir_ / "train-labels-idx1-ubyte", idx_file(0x0C, {5}, Bytes(20, 0)));
    EXPECT_THAT(thrown_message([&] { MnistDataset{dir_.path(), MnistSplit::Train}; }),
                HasSubstr("labels must be ubyte, the file holds int32"));
}

TEST_F(MnistFolder, ABrokenFileIsNamed) {
    write_raw(dir_ / "train-images-idx3-ubyte", idx_file(0x08, {5, 4, 3}, Bytes(7, 0)));
    EXPECT_THAT(thrown_message([&] { MnistDataset{dir_.path(), MnistSplit::Train}; }),
                AllOf(HasSubstr((dir_ / "train-images-idx3-ubyte").string()), HasSubstr("truncated")));
}

TEST(FashionMnist, RealTestSplitHasTenThousandBalancedExamples) {
    const auto dir = default_fashion_mnist_dir();
    if (!std::filesystem::exists(dir))
        GTEST_SKIP() << dir << " is not there; install Debian's dataset-fashion-mnist to run this test";
    const MnistDataset test(dir, MnistSplit::Test);
    ASSERT_EQ(test.inputs().shape(), (Shape{10000, 784}));
    EXPECT_EQ(test.image_height(), 28);
    EXPECT_EQ(test.image_width(), 28);
    std::array<int, 10> per_class{};
    for (std::int32_t label : test.targets().to_vector<std::int32_t>()) ++per_class.at(static_cast<std::size_t>(label));
    for (int count : per_class) EXPECT_EQ(count, 1000);
}

}  // namespace
}  // namespace gl::test
