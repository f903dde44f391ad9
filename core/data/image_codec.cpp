#include "data/image_codec.hpp"

#include <png.h>
#include <turbojpeg.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>

#include "base/error.hpp"

namespace gl {

namespace {

/// The largest image the decoders accept (64 megapixels): a header can claim any size, and
/// a forged one must not make the loader allocate gigabytes.
constexpr std::int64_t kMaxPixels = std::int64_t{1} << 26;

void check_image_size(std::int64_t width, std::int64_t height, const char* format) {
    if (width <= 0 || height <= 0 || width * height > kMaxPixels)
        throw Error(std::string(format) + " header says " + std::to_string(width) + " x " + std::to_string(height) +
                    " pixels; images up to " + std::to_string(kMaxPixels) + " pixels are accepted: resize the image");
}

}  // namespace

namespace {

bool is_jpeg(const std::vector<std::uint8_t>& b) { return b.size() >= 3 && b[0] == 0xFF && b[1] == 0xD8 && b[2] == 0xFF; }

bool is_png(const std::vector<std::uint8_t>& b) {
    return b.size() >= 8 && png_sig_cmp(b.data(), 0, 8) == 0;
}

/// A TurboJPEG handle that is destroyed on every path.
using TjHandle = std::unique_ptr<void, int (*)(tjhandle)>;

TjHandle tj_handle(tjhandle h) {
    check(h != nullptr, "libjpeg-turbo: cannot create a handle (out of memory?)");
    return TjHandle(h, tjDestroy);
}

Image decode_jpeg(const std::vector<std::uint8_t>& bytes) {
    TjHandle tj = tj_handle(tjInitDecompress());
    int width = 0, height = 0, subsampling = 0, colorspace = 0;
    if (tjDecompressHeader3(tj.get(), bytes.data(), static_cast<unsigned long>(bytes.size()), &width, &height,
                            &subsampling, &colorspace) != 0)
        throw Error(std::string("bad JPEG header: ") + tjGetErrorStr2(tj.get()));
    check_image_size(width, height, "the JPEG");
    Image image;
    image.width = width;
    image.height = height;
    image.channels = colorspace == TJCS_GRAY ? 1 : 3;
    image.pixels.resize(static_cast<std::size_t>(width) * height * image.channels);
    // TJFLAG_STOPONWARNING: a file cut short is only a warning to libjpeg (it fills the
    // rest with grey); a data set must not train on half a picture.
    const int pixel_format = image.channels == 1 ? TJPF_GRAY : TJPF_RGB;
    if (tjDecompress2(tj.get(), bytes.data(), static_cast<unsigned long>(bytes.size()), image.pixels.data(), width,
                      0, height, pixel_format, TJFLAG_STOPONWARNING) != 0) {
        const std::string why = tjGetErrorStr2(tj.get());
        if (why.find("Premature end") != std::string::npos)
            throw Error("truncated JPEG (the file ends before the image does): " + why);
        throw Error("bad JPEG: " + why);
    }
    return image;
}

Image decode_png(const std::vector<std::uint8_t>& bytes) {
    png_image png;
    std::memset(&png, 0, sizeof png);
    png.version = PNG_IMAGE_VERSION;
    if (!png_image_begin_read_from_memory(&png, bytes.data(), bytes.size()))
        throw Error(std::string("bad PNG header: ") + png.message);
    try {
        check_image_size(png.width, png.height, "the PNG");
    } catch (...) {
        png_image_free(&png);
        throw;
    }
    const bool colour = (png.format & PNG_FORMAT_FLAG_COLOR) != 0;
    png.format = colour ? PNG_FORMAT_RGB : PNG_FORMAT_GRAY;
    Image image;
    image.width = static_cast<int>(png.width);
    image.height = static_cast<int>(png.height);
    image.channels = colour ? 3 : 1;
    image.pixels.resize(PNG_IMAGE_SIZE(png));
    if (!png_image_finish_read(&png, nullptr, image.pixels.data(), 0, nullptr)) {
        const std::string why = png.message;
        png_image_free(&png);
        if (why.find("EOF") != std::string::npos || why.find("end") != std::string::npos ||
            why.find("truncat") != std::string::npos)
            throw Error("truncated PNG (the file ends before the image does): " + why);
        throw Error("bad PNG: " + why);
    }
    return image;
}

void check_encodable(const Image& image) {
    check(image.width > 0 && image.height > 0 && (image.channels == 1 || image.channels == 3) &&
              image.pixels.size() == static_cast<std::size_t>(image.width) * image.height * image.channels,
          "encode_image: the image must be H x W x 1 or 3 bytes with H, W positive");
}

std::vector<std::uint8_t> encode_jpeg(const Image& image, int quality) {
    check(quality >= 1 && quality <= 100, "encode_image: JPEG quality must be 1..100");
    TjHandle tj = tj_handle(tjInitCompress());
    unsigned char* out = nullptr;
    unsigned long size = 0;
    const bool grey = image.channels == 1;
    const int rc = tjCompress2(tj.get(), image.pixels.data(), image.width, 0, image.height, grey ? TJPF_GRAY : TJPF_RGB,
                               &out, &size, grey ? TJSAMP_GRAY : TJSAMP_444, quality, 0);
    std::unique_ptr<unsigned char, void (*)(unsigned char*)> owned(out, tjFree);
    if (rc != 0) throw Error(std::string("JPEG encoding failed: ") + tjGetErrorStr2(tj.get()));
    return std::vector<std::uint8_t>(out, out + size);
}

std::vector<std::uint8_t> encode_png(const Image& image) {
    png_image png;
    std::memset(&png, 0, sizeof png);
    png.version = PNG_IMAGE_VERSION;
    png.width = static_cast<png_uint_32>(image.width);
    png.height = static_cast<png_uint_32>(image.height);
    png.format = image.channels == 1 ? PNG_FORMAT_GRAY : PNG_FORMAT_RGB;
    png_alloc_size_t size = 0;
    if (!png_image_write_to_memory(&png, nullptr, &size, 0, image.pixels.data(), 0, nullptr))
        throw Error(std::string("PNG encoding failed: ") + png.message);
    std::vector<std::uint8_t> out(size);
    if (!png_image_write_to_memory(&png, out.data(), &size, 0, image.pixels.data(), 0, nullptr))
        throw Error(std::string("PNG encoding failed: ") + png.message);
    out.resize(size);
    return out;
}

}  // namespace

Image decode_image(const std::vector<std::uint8_t>& bytes) {
    if (is_jpeg(bytes)) return decode_jpeg(bytes);
    if (is_png(bytes)) return decode_png(bytes);
    throw Error("not a JPEG or PNG image (its first bytes are neither signature; " + std::to_string(bytes.size()) +
                " bytes long)");
}

std::vector<std::uint8_t> encode_image(const Image& image, ImageFormat format, int jpeg_quality) {
    check_encodable(image);
    return format == ImageFormat::Jpeg ? encode_jpeg(image, jpeg_quality) : encode_png(image);
}

std::string format_name(ImageFormat format) { return format == ImageFormat::Jpeg ? "jpeg" : "png"; }

ImageFormat parse_image_format(const std::string& name) {
    if (name == "jpeg" || name == "jpg") return ImageFormat::Jpeg;
    if (name == "png") return ImageFormat::Png;
    throw Error("unknown image format '" + name + "'; choose jpeg or png");
}

}  // namespace gl
