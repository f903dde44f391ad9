// The JPEG/PNG decoders (core/data/image_codec.cpp) on hostile bytes under AddressSanitizer
// and UndefinedBehaviorSanitizer, built on their own with -fsanitize=address,undefined
// (tests/meson.build): the decoder is the part of the image pipeline that reads what a
// file says, so a bad file must end in gl::Error, never in a read past a buffer. Every
// prefix of a JPEG and a PNG (a file cut short anywhere), every byte of their headers
// flipped, forged sizes, and bytes that are no image at all. Exit status 0 when every
// case decoded or threw gl::Error; a sanitizer report fails the run (halt_on_error).
#include <cstdio>
#include <string>
#include <vector>

#include "base/error.hpp"
#include "data/image_codec.hpp"

namespace {

int failures = 0;
int cases = 0;

void expect(bool ok, const std::string& what) {
    if (!ok) {
        std::fprintf(stderr, "FAILED: %s\n", what.c_str());
        ++failures;
    }
}

/// A grey or colour test pattern (pixel value from its position).
gl::Image pattern(int h, int w, int channels) {
    gl::Image im{h, w, channels, {}};
    for (int y = 0; y < h; ++y)
        for (int x = 0; x < w; ++x)
            for (int c = 0; c < channels; ++c) im.pixels.push_back(static_cast<std::uint8_t>((7 * y + 13 * x + 50 * c) % 256));
    return im;
}

/// Decodes @p bytes: either an image whose pixel count matches its size, or gl::Error.
/// Anything else thrown is a failure; a memory error is the sanitizer's to report.
void decode_or_error(const std::vector<std::uint8_t>& bytes, const std::string& what) {
    ++cases;
    try {
        const gl::Image im = gl::decode_image(bytes);
        expect(im.width > 0 && im.height > 0 &&
                   im.pixels.size() == static_cast<std::size_t>(im.width) * im.height * im.channels,
               what + ": decoded an image whose pixels do not match its size");
    } catch (const gl::Error&) {
    } catch (const std::exception& e) {
        expect(false, what + ": threw something other than gl::Error: " + e.what());
    }
}

void hostile_variants(const std::vector<std::uint8_t>& file, const std::string& name) {
    for (std::size_t n = 0; n < file.size(); ++n)
        decode_or_error(std::vector<std::uint8_t>(file.begin(), file.begin() + static_cast<std::ptrdiff_t>(n)),
                        name + " cut to " + std::to_string(n) + " bytes");
    const std::size_t header = std::min<std::size_t>(file.size(), 200);
    for (std::size_t i = 0; i < header; ++i) {
        for (std::uint8_t flip : {std::uint8_t{0xFF}, std::uint8_t{0x01}, std::uint8_t{0x80}}) {
            std::vector<std::uint8_t> bad = file;
            bad[i] ^= flip;
            decode_or_error(bad, name + " with byte " + std::to_string(i) + " xor " + std::to_string(flip));
        }
    }
}

}  // namespace

int main() {
    for (int channels : {1, 3}) {
        const gl::Image im = pattern(19, 23, channels);
        const std::string kind = channels == 1 ? "grey" : "colour";
        const auto png = gl::encode_image(im, gl::ImageFormat::Png);
        const auto jpeg = gl::encode_image(im, gl::ImageFormat::Jpeg, 90);
        expect(gl::decode_image(png).pixels == im.pixels, kind + " PNG round trip");
        expect(gl::decode_image(jpeg).pixels.size() == im.pixels.size(), kind + " JPEG round trip size");
        hostile_variants(png, kind + " PNG");
        hostile_variants(jpeg, kind + " JPEG");
    }
    decode_or_error({}, "no bytes");
    decode_or_error({0xFF, 0xD8, 0xFF}, "a JPEG signature alone");
    decode_or_error({0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'}, "a PNG signature alone");
    decode_or_error(std::vector<std::uint8_t>(4096, 0xFF), "4096 bytes of 0xFF");
    std::fprintf(stderr, "%d hostile inputs decoded or refused with gl::Error; %d failure(s)\n", cases, failures);
    return failures == 0 ? 0 : 1;
}
