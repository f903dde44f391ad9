/// @file
/// @brief Encoded images (JPEG, PNG) to pixels and back, with libjpeg-turbo and libpng.
///
/// Owns: telling a JPEG from a PNG by its first bytes, decoding either into 8-bit pixels,
/// encoding pixels as either, and errors that say what is wrong with the bytes (cut
/// short, not an image, a decoder's complaint). Knows nothing about tensors, datasets or
/// files on disk (image_folder.hpp reads the files).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace gl {

/// 8-bit pixels, rows top to bottom, channels interleaved (HWC): 1 channel (grey) or 3 (RGB).
struct Image {
    int height = 0;                    ///< rows
    int width = 0;                     ///< columns
    int channels = 0;                  ///< 1 (grey) or 3 (RGB)
    std::vector<std::uint8_t> pixels;  ///< height * width * channels bytes

    /// The byte of channel @p c at row @p y, column @p x.
    std::uint8_t at(int y, int x, int c) const {
        return pixels[(static_cast<std::size_t>(y) * width + x) * channels + c];
    }
};

/// How an image is encoded.
enum class ImageFormat {
    Jpeg,  ///< lossy, libjpeg-turbo
    Png,   ///< lossless, libpng
};

/// Decodes a JPEG or PNG (told apart by their signatures) into 1 or 3 channels: grey
/// stays grey, colour becomes RGB (alpha and palettes are dropped, 16-bit is cut to 8).
/// Throws gl::Error starting "not a JPEG or PNG image", "truncated" or "bad JPEG/PNG"
/// with the decoder's message.
Image decode_image(const std::vector<std::uint8_t>& bytes);

/// Encodes @p image (1 or 3 channels) as @p format; @p jpeg_quality 1..100.
std::vector<std::uint8_t> encode_image(const Image& image, ImageFormat format, int jpeg_quality = 95);

/// "jpeg" or "png"; and back (throws for anything else, listing the choices).
std::string format_name(ImageFormat format);
/// Parses "jpeg"/"jpg"/"png".
ImageFormat parse_image_format(const std::string& name);

}  // namespace gl
