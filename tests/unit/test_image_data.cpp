// Unit tests of the image pipeline: JPEG/PNG coding (core/data/image_codec.hpp), the
// image folder data set and its bad files (image_folder.hpp), and the transforms
// (transforms.hpp) on hand-checkable images.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>

#include "data/dataloader.hpp"
#include "data/image_folder.hpp"
#include "thrown_message.hpp"

namespace gl::test {
namespace {

namespace fs = std::filesystem;
using ::testing::AllOf;
using ::testing::HasSubstr;

/// A grey (channels 1) or colour test pattern: pixel value from its position.
Image pattern(int h, int w, int channels, int seed = 0) {
    Image im{h, w, channels, {}};
    for (int y = 0; y < h; ++y)
        for (int x = 0; x < w; ++x)
            for (int c = 0; c < channels; ++c) im.pixels.push_back(static_cast<std::uint8_t>((7 * y + 13 * x + 50 * c + seed) % 256));
    return im;
}

void write_file(const fs::path& p, const std::vector<std::uint8_t>& bytes) {
    fs::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()),
                                            static_cast<std::streamsize>(bytes.size()));
}

/// A fresh folder under the test's temporary directory.
fs::path fresh_dir(const std::string& name) {
    const fs::path dir = fs::path(::testing::TempDir()) / ("gradlab_" + name + "_" + std::to_string(::getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir);
    return dir;
}

TEST(ImageCodec, PngRoundTripIsExact) {
    for (int channels : {1, 3}) {
        const Image im = pattern(9, 13, channels);
        const Image back = decode_image(encode_image(im, ImageFormat::Png));
        EXPECT_EQ(back.height, 9);
        EXPECT_EQ(back.width, 13);
        EXPECT_EQ(back.channels, channels);
        EXPECT_EQ(back.pixels, im.pixels);
    }
}

TEST(ImageCodec, JpegRoundTripIsClose) {
    const Image im = pattern(16, 24, 1);
    const Image back = decode_image(encode_image(im, ImageFormat::Jpeg, 100));
    ASSERT_EQ(back.pixels.size(), im.pixels.size());
    int worst = 0;
    for (std::size_t i = 0; i < im.pixels.size(); ++i) worst = std::max(worst, std::abs(back.pixels[i] - im.pixels[i]));
    EXPECT_LE(worst, 8) << "quality 100 grey JPEG";
}

TEST(ImageCodec, BadBytesGiveClearErrors) {
    EXPECT_THAT(thrown_message([] { decode_image({'h', 'e', 'l', 'l', 'o'}); }), HasSubstr("not a JPEG or PNG image"));
    EXPECT_THAT(thrown_message([] { decode_image({}); }), HasSubstr("not a JPEG or PNG image"));
    auto jpeg = encode_image(pattern(32, 32, 3), ImageFormat::Jpeg);
    jpeg.resize(jpeg.size() / 2);
    EXPECT_THAT(thrown_message([&] { decode_image(jpeg); }), HasSubstr("truncated JPEG"));
    auto png = encode_image(pattern(32, 32, 3), ImageFormat::Png);
    png.resize(png.size() / 2);
    EXPECT_THAT(thrown_message([&] { decode_image(png); }), HasSubstr("PNG"));
    EXPECT_THAT(thrown_message([] { parse_image_format("gif"); }), HasSubstr("choose jpeg or png"));
}

/// root/{a,b}/ with 3 and 2 PNG images of 8 x 6.
fs::path small_folder(const std::string& name) {
    const fs::path root = fresh_dir(name);
    for (int i = 0; i < 3; ++i) write_file(root / "a" / ("img" + std::to_string(i) + ".png"), encode_image(pattern(8, 6, 1, i), ImageFormat::Png));
    for (int i = 0; i < 2; ++i) write_file(root / "b" / ("img" + std::to_string(i) + ".jpg"), encode_image(pattern(8, 6, 1, 9 + i), ImageFormat::Jpeg, 100));
    return root;
}

TEST(ImageFolder, ListsClassesAndDecodesFiles) {
    const fs::path root = small_folder("list");
    const auto data = std::make_shared<ImageFolder>(root);
    EXPECT_EQ(data->size(), 5u);
    EXPECT_EQ(data->num_classes(), 2);
    EXPECT_EQ(data->classes(), (std::vector<std::string>{"a", "b"}));
    EXPECT_EQ(data->example_shape(), (Shape{1, 8, 6}));
    const Batch batch = data->get_batch({0, 4});
    EXPECT_EQ(batch.inputs.shape(), (Shape{2, 1, 8, 6}));
    EXPECT_EQ(batch.targets.to_vector<std::int32_t>(), (std::vector<std::int32_t>{0, 1}));
    EXPECT_FLOAT_EQ(batch.inputs.at({0, 0, 1, 2}), pattern(8, 6, 1, 0).at(1, 2, 0) / 255.0f);
    fs::remove_all(root);
}

TEST(ImageFolder, BadFilesStopTheEpochNamingTheFile) {
    const fs::path root = small_folder("bad");
    auto truncated = encode_image(pattern(8, 6, 1), ImageFormat::Jpeg);
    truncated.resize(truncated.size() - 8);  // cut into the entropy-coded data
    write_file(root / "a" / "x_truncated.jpg", truncated);
    write_file(root / "b" / "x_text.png", {'n', 'o', 't', ' ', 'p', 'n', 'g'});
    write_file(root / "b" / "x_wrong_size.png", encode_image(pattern(9, 6, 1), ImageFormat::Png));
    const auto data = std::make_shared<ImageFolder>(root);
    ASSERT_EQ(data->size(), 8u);
    const auto find = [&](const std::string& name) {
        for (std::size_t i = 0; i < data->size(); ++i)
            if (data->file(i).filename() == name) return i;
        ADD_FAILURE() << name << " not listed";
        return std::size_t{0};
    };
    EXPECT_THAT(thrown_message([&] { data->get_batch({find("x_truncated.jpg")}); }),
                AllOf(HasSubstr("x_truncated.jpg"), HasSubstr("truncated JPEG"), HasSubstr("skip_bad_files")));
    EXPECT_THAT(thrown_message([&] { data->get_batch({find("x_text.png")}); }),
                AllOf(HasSubstr("x_text.png"), HasSubstr("not a JPEG or PNG")));
    EXPECT_THAT(thrown_message([&] { data->get_batch({find("x_wrong_size.png")}); }),
                AllOf(HasSubstr("x_wrong_size.png"), HasSubstr("wrong size"), HasSubstr("[1, 9, 6]")));
    // Through the loader, with workers: the error names the sample and the file.
    const DataLoader loader(data, {.batch_size = 3, .num_workers = 2});
    EXPECT_THAT(thrown_message([&] { for (const Batch& b : loader.epoch(0)) (void)b; }),
                AllOf(HasSubstr("sample 3"), HasSubstr("x_truncated.jpg")));
    fs::remove_all(root);
}

TEST(ImageFolder, SkipsAndCountsBadFilesOnRequest) {
    const fs::path root = small_folder("skip");
    write_file(root / "a" / "x_text.png", {'n', 'o', 'p', 'e'});
    write_file(root / "b" / "x_wrong_size.jpg", encode_image(pattern(5, 6, 1), ImageFormat::Jpeg));
    const auto data = std::make_shared<ImageFolder>(root, ImageFolderOptions{.transform = nullptr, .skip_bad_files = true, .image_shape = {}});
    const DataLoader loader(data, {.batch_size = 7, .num_workers = 2});
    std::int64_t seen = 0;
    for (const Batch& batch : loader.epoch(0)) seen += batch.inputs.size(0);
    EXPECT_EQ(seen, 5);
    EXPECT_EQ(data->skipped(), 2u);
    EXPECT_EQ(data->skipped_files().size(), 2u);
    fs::remove_all(root);
}

TEST(ImageFolder, RejectsFoldersWithoutImages) {
    const fs::path root = fresh_dir("empty");
    EXPECT_THAT(thrown_message([&] { ImageFolder(root / "missing"); }), HasSubstr("is not a folder"));
    EXPECT_THAT(thrown_message([&] { ImageFolder{root}; }), HasSubstr("no class folders"));
    fs::create_directories(root / "a");
    EXPECT_THAT(thrown_message([&] { ImageFolder{root}; }), HasSubstr("no .jpg, .jpeg or .png files"));
    fs::remove_all(root);
}

TEST(ImageCodec, AForgedHugeSizeIsRefusedBeforeAllocating) {
    // A JPEG whose frame header (SOF0: FF C0, length, precision, height, width) claims
    // 16128 x 16128 pixels (libjpeg itself stops at 65500 a side): the decoder must
    // refuse before allocating 260 MB for it.
    auto jpeg = encode_image(pattern(8, 8, 1), ImageFormat::Jpeg);
    bool patched = false;
    for (std::size_t i = 0; i + 8 < jpeg.size() && !patched; ++i)
        if (jpeg[i] == 0xFF && jpeg[i + 1] == 0xC0) {
            for (std::size_t k : {i + 5, i + 7}) jpeg[k] = 0x3F, jpeg[k + 1] = 0x00;  // height, width: 0x3F00
            patched = true;
        }
    ASSERT_TRUE(patched) << "no SOF0 marker in the encoded JPEG";
    EXPECT_THAT(thrown_message([&] { decode_image(jpeg); }),
                AllOf(HasSubstr("16128 x 16128"), HasSubstr("images up to"), HasSubstr("resize the image")));
}

TEST(ImageFolder, ABadFirstFileIsReportedWhenTheFolderIsOpened) {
    const fs::path root = fresh_dir("bad_first");
    write_file(root / "a" / "0_broken.png", {'n', 'o', 't', ' ', 'p', 'n', 'g'});
    write_file(root / "a" / "1_good.png", encode_image(pattern(8, 6, 1), ImageFormat::Png));
    EXPECT_THAT(thrown_message([&] { ImageFolder{root}; }),
                AllOf(HasSubstr("0_broken.png"), HasSubstr("first file sets the image size"), HasSubstr("image_shape")));
    // Given the size, the folder opens and the bad file is met (and skipped) at batch time.
    const auto data = std::make_shared<ImageFolder>(root, ImageFolderOptions{.transform = nullptr, .skip_bad_files = true,
                                                                             .image_shape = {1, 8, 6}});
    EXPECT_EQ(data->get_batch({0, 1}).inputs.size(0), 1);
    EXPECT_EQ(data->skipped(), 1u);
    fs::remove_all(root);
}

TEST(ImageFolder, ABatchOfOnlyBadFilesIsAnErrorEvenWhenSkipping) {
    const fs::path root = fresh_dir("all_bad");
    write_file(root / "a" / "good.png", encode_image(pattern(8, 6, 1), ImageFormat::Png));
    write_file(root / "b" / "x1.png", {'n', 'o', 'p', 'e'});
    write_file(root / "b" / "x2.png", {'n', 'o', 'p', 'e'});
    const auto data = std::make_shared<ImageFolder>(root, ImageFolderOptions{.transform = nullptr, .skip_bad_files = true,
                                                                             .image_shape = {}});
    EXPECT_THAT(thrown_message([&] { data->get_batch({1, 2}); }),
                AllOf(HasSubstr("every one of the 2 samples"), HasSubstr("too many bad files")));
    // Through the loader with workers, the batch number is in the message too.
    const DataLoader loader(data, {.batch_size = 1, .num_workers = 2});
    EXPECT_THAT(thrown_message([&] { for (const Batch& b : loader.epoch(0)) (void)b; }),
                AllOf(HasSubstr("batch 1"), HasSubstr("too many bad files")));
    fs::remove_all(root);
}

TEST(ImageFolder, ExportRefusesAFolderThatHoldsFiles) {
    const fs::path root = fresh_dir("export_full");
    write_file(root / "keep.txt", {'x'});
    EXPECT_THAT(thrown_message([&] { export_image_folder(root / "no-mnist-here", root, ImageFormat::Png, 1); }),
                AllOf(HasSubstr("exists and is not an empty folder"), HasSubstr("give a new folder")));
    EXPECT_TRUE(fs::exists(root / "keep.txt")) << "nothing removed";
    fs::remove_all(root);
}

/// A data set that makes whatever example it is told to (for the loader's own checks).
class MadeUpExamples : public ExampleDataset {
public:
    MadeUpExamples(Shape made, std::int32_t target) : made_(std::move(made)), target_(target) {}
    std::size_t size() const override { return 4; }
    Shape example_shape() const override { return {1, 2, 2}; }
    std::int64_t num_classes() const override { return 3; }
    std::optional<Example> get_example(std::size_t, Rng&) const override { return Example{zeros(made_), target_}; }

private:
    Shape made_;
    std::int32_t target_;
};

TEST(ImageFolder, AnExampleOfAnotherShapeOrClassNamesTheSample) {
    EXPECT_THAT(thrown_message([] { MadeUpExamples({1, 3, 2}, 0).get_batch({2}); }),
                AllOf(HasSubstr("sample 2"), HasSubstr("[1, 3, 2]"), HasSubstr("announced float32 [1, 2, 2]"),
                      HasSubstr("add a Resize or CenterCrop")));
    EXPECT_THAT(thrown_message([] { MadeUpExamples({1, 2, 2}, 3).get_batch({1}); }),
                AllOf(HasSubstr("sample 1"), HasSubstr("target 3 is out of range")));
    EXPECT_EQ(MadeUpExamples({1, 2, 2}, 2).get_batch({0, 3}).inputs.shape(), (Shape{2, 1, 2, 2}));
}

// ---- transforms -----------------------------------------------------------------------

Tensor ramp(int c, int h, int w) {
    Tensor t = empty({c, h, w});
    for (std::int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = static_cast<float>(i % 97) / 96.0f;
    return t;
}

TEST(Transforms, ResizeByTwoAveragesNeighbours) {
    // Halving with align_corners = false samples between pixel pairs: their mean.
    Tensor x = from_vector<float>({0, 1, 2, 3, 4, 5, 6, 7}, {1, 1, 8});
    Rng rng(0);
    const Tensor y = Resize(1, 4).apply(x, rng);
    EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{0.5f, 2.5f, 4.5f, 6.5f}));
    // Same size is the identity.
    const Tensor r = ramp(3, 5, 7);
    EXPECT_EQ(Resize(5, 7).apply(r, rng).to_vector<float>(), r.to_vector<float>());
}

TEST(Transforms, ResizedCropOfAWholeImageOnOddSizes) {
    const Tensor x = from_vector<float>({0, 10, 20}, {1, 1, 3});
    // Enlarging 3 -> 5: sources at (d + 0.5) * 0.6 - 0.5 = -0.2 (clamped 0), 0.4, 1, 1.6, 2.2 (past the edge: 2).
    const Tensor y = resized_crop(x, {0, 0, 1, 3}, 1, 5);
    const std::vector<float> expected{0, 4, 10, 16, 20};
    const auto got = y.to_vector<float>();
    for (int i = 0; i < 5; ++i) EXPECT_NEAR(got[i], expected[i], 1e-5) << i;
}

TEST(Transforms, CenterCropAndFlip) {
    const Tensor x = ramp(1, 5, 6);
    Rng rng(1);
    const Tensor c = CenterCrop(3, 2).apply(x, rng);
    EXPECT_EQ(c.shape(), (Shape{1, 3, 2}));
    EXPECT_EQ(c.at({0, 0, 0}), x.at({0, 1, 2}));
    Rng always(2);
    const Tensor f = RandomHorizontalFlip(1.0f).apply(x, always);
    EXPECT_EQ(f.at({0, 2, 0}), x.at({0, 2, 5}));
    EXPECT_EQ(RandomHorizontalFlip(0.0f).apply(x, always).to_vector<float>(), x.to_vector<float>());
    EXPECT_THAT(thrown_message([&] { CenterCrop(6, 6).apply(x, rng); }), HasSubstr("does not fit"));
}

TEST(Transforms, RandomResizedCropBoxesStayInsideAndFollowTheScale) {
    const RandomResizedCrop crop(8, 8, 0.25f, 0.5f);
    Rng rng(3);
    for (int i = 0; i < 500; ++i) {
        const CropBox b = crop.sample_box(37, 51, rng);
        ASSERT_GE(b.top, 0);
        ASSERT_GE(b.left, 0);
        ASSERT_LE(b.top + b.height, 37);
        ASSERT_LE(b.left + b.width, 51);
        const double area = static_cast<double>(b.height) * b.width / (37.0 * 51.0);
        EXPECT_GT(area, 0.2);
        EXPECT_LT(area, 0.56);
    }
    // An impossible scale falls back to the whole image narrowed to the ratio range.
    const CropBox whole = RandomResizedCrop(4, 4, 1.0f, 1.0f, 1.0f, 1.0f).sample_box(10, 30, rng);
    EXPECT_EQ(whole.height, 10);
    EXPECT_EQ(whole.width, 10);
    EXPECT_EQ(whole.left, 10);
}

TEST(Transforms, ColorJitterMatchesHandComputedValues) {
    Tensor x = from_vector<float>({0.2f, 0.6f, 0.5f, 0.1f, 0.4f, 0.4f}, {3, 1, 2});  // pixels (0.2,0.5,0.4) and (0.6,0.1,0.4)
    JitterParams bright;
    bright.brightness = 2.0f;
    EXPECT_THAT(color_jitter(x, bright).to_vector<float>(), ::testing::Pointwise(::testing::FloatNear(1e-6f),
                std::vector<float>{0.4f, 1.0f, 1.0f, 0.2f, 0.8f, 0.8f}));
    JitterParams desaturate;
    desaturate.saturation = 0.0f;
    const auto grey = color_jitter(x, desaturate).to_vector<float>();
    EXPECT_NEAR(grey[0], 0.2989f * 0.2f + 0.587f * 0.5f + 0.114f * 0.4f, 1e-6);
    EXPECT_NEAR(grey[2], grey[0], 1e-6);
    JitterParams full_turn;
    full_turn.hue = 0.5f;
    const auto twice = color_jitter(color_jitter(x, full_turn), full_turn).to_vector<float>();
    EXPECT_THAT(twice, ::testing::Pointwise(::testing::FloatNear(1e-5f), x.to_vector<float>()));
    JitterParams half_turn = full_turn;  // red-ish (0.6, 0.1, 0.4) turned by 180 degrees: complementary
    const auto turned = color_jitter(x, half_turn).to_vector<float>();
    EXPECT_NEAR(turned[1], 0.1f, 1e-5);   // new red = old min
    EXPECT_NEAR(turned[3], 0.6f, 1e-5);   // new green = old max
}

TEST(Transforms, BadImagesAndSettingsGiveClearErrors) {
    Rng rng(0);
    const Tensor flat = zeros({4, 4});
    EXPECT_THAT(thrown_message([&] { Resize(2, 2).apply(flat, rng); }),
                AllOf(HasSubstr("Resize"), HasSubstr("float32 image [C, H, W]"), HasSubstr("apply ToTensor first")));
    EXPECT_THAT(thrown_message([&] { RandomResizedCrop(2, 2).apply(zeros({1, 4, 4}, DType::Float64), rng); }),
                HasSubstr("RandomResizedCrop: expects a float32 image"));
    EXPECT_THAT(thrown_message([&] { Normalize({0.5f, 0.5f}, {1.0f, 1.0f}).apply(zeros({1, 4, 4}), rng); }),
                AllOf(HasSubstr("2 channel(s)"), HasSubstr("[1, 4, 4]")));
    EXPECT_THAT(thrown_message([&] { resized_crop(zeros({1, 4, 4}), {1, 1, 4, 2}, 2, 2); }),
                AllOf(HasSubstr("must lie inside the [1, 4, 4] image")));
    EXPECT_THAT(thrown_message([&] { resized_crop(zeros({1, 4, 4}), {0, 0, 2, 2}, 0, 2); }), HasSubstr("non-empty"));
    EXPECT_THAT(thrown_message([&] { CenterCrop(3, 3).output_shape({4, 4}); }), HasSubstr("does not fit"));
    EXPECT_THAT(thrown_message([&] { Resize(2, 2).output_shape({4, 4}); }),
                AllOf(HasSubstr("Resize: expects an image [C, H, W], got [4, 4]")));
    EXPECT_THAT(thrown_message([] { RandomResizedCrop(4, 4, 0.0f, 1.0f); }), HasSubstr("0 < scale_lo <= scale_hi <= 1"));
    EXPECT_THAT(thrown_message([] { RandomResizedCrop(4, 4, 0.5f, 1.0f, 2.0f, 1.0f); }), HasSubstr("ratio_lo <= ratio_hi"));
    EXPECT_THAT(thrown_message([] { RandomHorizontalFlip(1.5f); }), HasSubstr("[0, 1]"));
    EXPECT_THAT(thrown_message([] { ColorJitter(0.1f, 0.1f, 0.1f, 0.6f); }), HasSubstr("hue must be in [0, 0.5]"));
    EXPECT_THAT(thrown_message([] { ColorJitter(-0.1f, 0.0f, 0.0f, 0.0f); }), HasSubstr("non-negative"));
    EXPECT_THAT(thrown_message([] { Normalize({0.5f}, {0.0f}); }), HasSubstr("stddev must be positive"));
    EXPECT_THAT(thrown_message([] { Compose({nullptr}); }), HasSubstr("a step is null"));
    EXPECT_THAT(thrown_message([] { to_tensor(Image{2, 2, 1, {1, 2, 3}}); }), HasSubstr("pixel count"));
}

TEST(Transforms, ComposeAndNormalizeInAFolderPipeline) {
    const fs::path root = small_folder("pipeline");
    auto pipeline = std::make_shared<Compose>(std::vector<std::shared_ptr<const Transform>>{
        std::make_shared<RandomResizedCrop>(5, 5), std::make_shared<RandomHorizontalFlip>(),
        std::make_shared<ColorJitter>(0.4f, 0.4f, 0.4f, 0.1f), std::make_shared<Normalize>(std::vector<float>{0.5f}, std::vector<float>{0.25f})});
    const auto data = std::make_shared<ImageFolder>(root, ImageFolderOptions{.transform = pipeline, .skip_bad_files = false, .image_shape = {}});
    EXPECT_EQ(data->example_shape(), (Shape{1, 5, 5}));
    const DataLoader one(data, {.batch_size = 2, .shuffle = true, .seed = 4});
    const DataLoader three(data, {.batch_size = 2, .shuffle = true, .seed = 4, .num_workers = 3});
    std::vector<std::vector<float>> a, b;
    for (const Batch& batch : one.epoch(1)) a.push_back(batch.inputs.to_vector<float>());
    for (const Batch& batch : three.epoch(1)) b.push_back(batch.inputs.to_vector<float>());
    EXPECT_EQ(a, b) << "the same augmented batches with 0 and 3 workers";
    EXPECT_THAT(thrown_message([&] { Normalize({0.5f, 0.5f}, {1.0f, 1.0f}).output_shape({1, 4, 4}); }),
                HasSubstr("2 channel(s)"));
    fs::remove_all(root);
}

}  // namespace
}  // namespace gl::test
