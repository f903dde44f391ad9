// Image transforms on float [C, H, W] tensors; RandomResizedCrop is lab 06's.
#include "data/transforms.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "base/error.hpp"

namespace gl {

namespace {

/// The contiguous [C, H, W] float image, or an error naming @p who.
Tensor chw(const Tensor& image, const char* who) {
    check(image.defined() && image.dtype() == DType::Float32 && image.dim() == 3,
          [&] { return std::string(who) + ": expects a float32 image [C, H, W] (apply ToTensor first)"; });
    return image.contiguous();
}

int channels(const Tensor& t) { return static_cast<int>(t.size(0)); }
int rows(const Tensor& t) { return static_cast<int>(t.size(1)); }
int cols(const Tensor& t) { return static_cast<int>(t.size(2)); }

Shape with_size(const Shape& in, int h, int w, const char* who) {
    check(in.size() == 3, [&] { return std::string(who) + ": expects an image [C, H, W], got " + shape_str(in); });
    return {in[0], h, w};
}

}  // namespace

Tensor to_tensor(const Image& image) {
    check(image.channels > 0 && image.pixels.size() == static_cast<std::size_t>(image.height) * image.width * image.channels,
          "to_tensor: the image's pixel count does not match its size");
    Tensor out = empty({image.channels, image.height, image.width});
    float* o = out.data<float>();
    const std::size_t plane = static_cast<std::size_t>(image.height) * image.width;
    for (int c = 0; c < image.channels; ++c)
        for (int y = 0; y < image.height; ++y)
            for (int x = 0; x < image.width; ++x)
                o[c * plane + static_cast<std::size_t>(y) * image.width + x] = image.at(y, x, c) / 255.0f;
    return out;
}

Compose::Compose(std::vector<std::shared_ptr<const Transform>> steps) : steps_(std::move(steps)) {
    for (const auto& s : steps_) check(s != nullptr, "Compose: a step is null");
}

Tensor Compose::apply(const Tensor& image, Rng& rng) const {
    Tensor x = image;
    for (const auto& s : steps_) x = s->apply(x, rng);
    return x;
}

Shape Compose::output_shape(const Shape& in) const {
    Shape s = in;
    for (const auto& step : steps_) s = step->output_shape(s);
    return s;
}

Normalize::Normalize(std::vector<float> mean, std::vector<float> stddev) : mean_(std::move(mean)), stddev_(std::move(stddev)) {
    check(!mean_.empty() && mean_.size() == stddev_.size(), "Normalize: give one mean and one stddev per channel");
    for (float s : stddev_) check(s > 0, "Normalize: every stddev must be positive");
}

Tensor Normalize::apply(const Tensor& image, Rng&) const {
    Tensor x = chw(image, "Normalize");
    output_shape(x.shape());
    Tensor out = empty(x.shape());
    const std::size_t plane = static_cast<std::size_t>(rows(x)) * cols(x);
    const float* in = x.data<float>();
    float* o = out.data<float>();
    for (int c = 0; c < channels(x); ++c)
        for (std::size_t i = 0; i < plane; ++i) o[c * plane + i] = (in[c * plane + i] - mean_[c]) / stddev_[c];
    return out;
}

Shape Normalize::output_shape(const Shape& in) const {
    check(in.size() == 3 && in[0] == static_cast<std::int64_t>(mean_.size()), [&] {
        return "Normalize: has " + std::to_string(mean_.size()) + " channel(s) of mean/stddev but the image is " +
               shape_str(in);
    });
    return in;
}

/// Where output pixel @p dst samples the input, and the neighbour to blend with.
struct Tap {
    int lo, hi;      ///< the two input pixels
    float frac;      ///< weight of hi
};

/// PyTorch's align_corners = false source index for output @p dst of @p out over an input
/// span of @p in pixels: pixel centres line up, and the left edge clamps at 0.
static Tap bilinear_tap(int dst, int out, int in) {
    const float scale = static_cast<float>(in) / static_cast<float>(out);
    const float src = std::max((static_cast<float>(dst) + 0.5f) * scale - 0.5f, 0.0f);
    const int lo = std::min(static_cast<int>(src), in - 1);
    const int hi = std::min(lo + 1, in - 1);
    return {lo, hi, src - static_cast<float>(lo)};
}

Tensor resized_crop(const Tensor& image, const CropBox& box, int out_h, int out_w) {
    const Tensor x = chw(image, "resized_crop");
    check(box.height > 0 && box.width > 0 && box.top >= 0 && box.left >= 0 && box.top + box.height <= rows(x) &&
              box.left + box.width <= cols(x) && out_h > 0 && out_w > 0,
          [&] { return "resized_crop: the box must lie inside the " + shape_str(x.shape()) + " image and the output be non-empty"; });
    Tensor out = empty({channels(x), out_h, out_w});
    // LAB 06 BEGIN: bilinear resize of a crop box
    // For each output row y and column x, bilinear_tap gives the two input rows (and
    // columns) inside the box to blend and the weight of the second. Read the input at
    // (box.top + row, box.left + column); blend the two columns of each row, then the
    // two rows: top * (1 - fy) + bottom * fy. The column taps are the same for every row
    // and channel: work them out once.
    const float* in = x.data<float>();
    float* o = out.data<float>();
    const int in_w = cols(x);  // read once, not per pixel: Tensor::size checks its argument
    const std::size_t in_plane = static_cast<std::size_t>(rows(x)) * in_w;
    const std::size_t out_plane = static_cast<std::size_t>(out_h) * out_w;
    std::vector<Tap> column_taps(static_cast<std::size_t>(out_w));
    for (int xo = 0; xo < out_w; ++xo) column_taps[static_cast<std::size_t>(xo)] = bilinear_tap(xo, out_w, box.width);
    for (int c = 0; c < channels(x); ++c) {
        const float* src = in + c * in_plane;
        const auto at = [&](int r, int q) { return src[static_cast<std::size_t>(box.top + r) * in_w + box.left + q]; };
        for (int y = 0; y < out_h; ++y) {
            const Tap ty = bilinear_tap(y, out_h, box.height);
            for (int xo = 0; xo < out_w; ++xo) {
                const Tap& tx = column_taps[static_cast<std::size_t>(xo)];
                const float top = at(ty.lo, tx.lo) * (1 - tx.frac) + at(ty.lo, tx.hi) * tx.frac;
                const float bottom = at(ty.hi, tx.lo) * (1 - tx.frac) + at(ty.hi, tx.hi) * tx.frac;
                o[c * out_plane + static_cast<std::size_t>(y) * out_w + xo] = top * (1 - ty.frac) + bottom * ty.frac;
            }
        }
    }
    // LAB 06 END
    return out;
}

Resize::Resize(int height, int width) : height_(height), width_(width) {
    check(height > 0 && width > 0, "Resize: the size must be positive");
}

Tensor Resize::apply(const Tensor& image, Rng&) const {
    const Tensor x = chw(image, "Resize");
    return resized_crop(x, CropBox{0, 0, rows(x), cols(x)}, height_, width_);
}

Shape Resize::output_shape(const Shape& in) const { return with_size(in, height_, width_, "Resize"); }

CenterCrop::CenterCrop(int height, int width) : height_(height), width_(width) {
    check(height > 0 && width > 0, "CenterCrop: the size must be positive");
}

Tensor CenterCrop::apply(const Tensor& image, Rng&) const {
    const Tensor x = chw(image, "CenterCrop");
    output_shape(x.shape());
    // torchvision rounds the offsets half to even (Python's round).
    const int top = static_cast<int>(std::nearbyint((rows(x) - height_) / 2.0));
    const int left = static_cast<int>(std::nearbyint((cols(x) - width_) / 2.0));
    Tensor out = empty({channels(x), height_, width_});
    const float* in = x.data<float>();
    float* o = out.data<float>();
    const std::size_t in_h = static_cast<std::size_t>(rows(x)), in_w = static_cast<std::size_t>(cols(x));
    for (int c = 0; c < channels(x); ++c)
        for (int y = 0; y < height_; ++y)
            std::copy_n(in + (static_cast<std::size_t>(c) * in_h + top + y) * in_w + left, width_,
                        o + (static_cast<std::size_t>(c) * height_ + y) * width_);
    return out;
}

Shape CenterCrop::output_shape(const Shape& in) const {
    check(in.size() == 3 && in[1] >= height_ && in[2] >= width_, [&] {
        return "CenterCrop: a " + std::to_string(height_) + " x " + std::to_string(width_) + " crop of a " +
               shape_str(in) + " image does not fit; Resize it first";
    });
    return with_size(in, height_, width_, "CenterCrop");
}

RandomResizedCrop::RandomResizedCrop(int height, int width, float scale_lo, float scale_hi, float ratio_lo, float ratio_hi)
    : height_(height), width_(width), scale_lo_(scale_lo), scale_hi_(scale_hi), ratio_lo_(ratio_lo), ratio_hi_(ratio_hi) {
    check(height > 0 && width > 0, "RandomResizedCrop: the size must be positive");
    check(0 < scale_lo && scale_lo <= scale_hi && scale_hi <= 1, "RandomResizedCrop: need 0 < scale_lo <= scale_hi <= 1");
    check(0 < ratio_lo && ratio_lo <= ratio_hi, "RandomResizedCrop: need 0 < ratio_lo <= ratio_hi");
}

CropBox RandomResizedCrop::sample_box(int in_h, int in_w, Rng& rng) const {
    check(in_h > 0 && in_w > 0, "RandomResizedCrop: the image is empty");
    // LAB 06 BEGIN: sample a random resized crop's box
    // Up to 10 tries: a target area of (in_h * in_w) * uniform(scale_lo_, scale_hi_), an
    // aspect ratio exp(uniform(log ratio_lo_, log ratio_hi_)); width = round(sqrt(area *
    // ratio)), height = round(sqrt(area / ratio)) (std::lround). If 0 < width <= in_w and
    // 0 < height <= in_h, place it uniformly: top = rng.below(in_h - height + 1), then
    // left = rng.below(in_w - width + 1). If no try fits, the fallback: the whole image,
    // narrowed to the nearest allowed ratio (round), centred (integer halves).
    const double area = static_cast<double>(in_h) * in_w;
    for (int attempt = 0; attempt < 10; ++attempt) {
        const double target = area * rng.uniform(scale_lo_, scale_hi_);
        const double ratio = std::exp(rng.uniform(std::log(ratio_lo_), std::log(ratio_hi_)));
        const int w = static_cast<int>(std::lround(std::sqrt(target * ratio)));
        const int h = static_cast<int>(std::lround(std::sqrt(target / ratio)));
        if (w > 0 && w <= in_w && h > 0 && h <= in_h) {
            const int top = static_cast<int>(rng.below(static_cast<std::uint64_t>(in_h - h + 1)));
            const int left = static_cast<int>(rng.below(static_cast<std::uint64_t>(in_w - w + 1)));
            return {top, left, h, w};
        }
    }
    const double in_ratio = static_cast<double>(in_w) / in_h;
    int w = in_w, h = in_h;
    if (in_ratio < ratio_lo_) h = static_cast<int>(std::lround(w / static_cast<double>(ratio_lo_)));
    else if (in_ratio > ratio_hi_) w = static_cast<int>(std::lround(h * static_cast<double>(ratio_hi_)));
    return {(in_h - h) / 2, (in_w - w) / 2, h, w};
    // LAB 06 END
}

Tensor RandomResizedCrop::apply(const Tensor& image, Rng& rng) const {
    const Tensor x = chw(image, "RandomResizedCrop");
    return resized_crop(x, sample_box(rows(x), cols(x), rng), height_, width_);
}

Shape RandomResizedCrop::output_shape(const Shape& in) const { return with_size(in, height_, width_, "RandomResizedCrop"); }

RandomHorizontalFlip::RandomHorizontalFlip(float p) : p_(p) {
    check(p >= 0 && p <= 1, "RandomHorizontalFlip: p must be in [0, 1]");
}

Tensor RandomHorizontalFlip::apply(const Tensor& image, Rng& rng) const {
    const Tensor x = chw(image, "RandomHorizontalFlip");
    if (!(rng.uniform() < p_)) return x;
    Tensor out = empty(x.shape());
    const float* in = x.data<float>();
    float* o = out.data<float>();
    const std::size_t lines = static_cast<std::size_t>(channels(x)) * rows(x);
    const std::size_t width = static_cast<std::size_t>(cols(x));
    for (std::size_t line = 0; line < lines; ++line)
        std::reverse_copy(in + line * width, in + (line + 1) * width, o + line * width);
    return out;
}

namespace {

/// torchvision's _blend: clamp(f * a + (1 - f) * b, 0, 1).
float blend(float a, float b, float f) { return std::clamp(f * a + (1 - f) * b, 0.0f, 1.0f); }

/// ITU-R 601 luma, torchvision's rgb_to_grayscale weights.
float grey(float r, float g, float b) { return 0.2989f * r + 0.587f * g + 0.114f * b; }

struct Planes {
    float* p;
    std::size_t plane;
    float& at(int c, std::size_t i) { return p[c * plane + i]; }
};

void adjust_brightness(Planes x, int ch, float f) {
    for (int c = 0; c < ch; ++c)
        for (std::size_t i = 0; i < x.plane; ++i) x.at(c, i) = blend(x.at(c, i), 0.0f, f);
}

void adjust_contrast(Planes x, int ch, float f) {
    double sum = 0;
    for (std::size_t i = 0; i < x.plane; ++i) sum += ch == 3 ? grey(x.at(0, i), x.at(1, i), x.at(2, i)) : x.at(0, i);
    const auto mean = static_cast<float>(sum / static_cast<double>(x.plane));
    for (int c = 0; c < ch; ++c)
        for (std::size_t i = 0; i < x.plane; ++i) x.at(c, i) = blend(x.at(c, i), mean, f);
}

void adjust_saturation(Planes x, int ch, float f) {
    if (ch != 3) return;
    for (std::size_t i = 0; i < x.plane; ++i) {
        const float g = grey(x.at(0, i), x.at(1, i), x.at(2, i));
        for (int c = 0; c < 3; ++c) x.at(c, i) = blend(x.at(c, i), g, f);
    }
}

/// One pixel's hue shift through HSV, as torchvision's _rgb2hsv and _hsv2rgb.
void shift_hue(float& r, float& g, float& b, float shift) {
    const float maxc = std::max({r, g, b}), minc = std::min({r, g, b});
    const bool flat = maxc == minc;
    const float cr = maxc - minc;
    const float s = cr / (flat ? 1.0f : maxc);
    const float div = flat ? 1.0f : cr;
    const float rc = (maxc - r) / div, gc = (maxc - g) / div, bc = (maxc - b) / div;
    float h = maxc == r ? bc - gc : (maxc == g ? 2.0f + rc - bc : 4.0f + gc - rc);
    h = std::fmod(h / 6.0f + 1.0f, 1.0f);
    h = std::fmod(std::fmod(h + shift, 1.0f) + 1.0f, 1.0f);
    const float v = maxc;
    const float sector = std::floor(h * 6.0f);
    const float f = h * 6.0f - sector;
    const float p = std::clamp(v * (1 - s), 0.0f, 1.0f), q = std::clamp(v * (1 - s * f), 0.0f, 1.0f);
    const float t = std::clamp(v * (1 - s * (1 - f)), 0.0f, 1.0f);
    switch (static_cast<int>(sector) % 6) {
        case 0: r = v, g = t, b = p; break;
        case 1: r = q, g = v, b = p; break;
        case 2: r = p, g = v, b = t; break;
        case 3: r = p, g = q, b = v; break;
        case 4: r = t, g = p, b = v; break;
        default: r = v, g = p, b = q; break;
    }
}

void adjust_hue(Planes x, int ch, float shift) {
    if (ch != 3 || shift == 0.0f) return;
    for (std::size_t i = 0; i < x.plane; ++i) shift_hue(x.at(0, i), x.at(1, i), x.at(2, i), shift);
}

}  // namespace

Tensor color_jitter(const Tensor& image, const JitterParams& p) {
    Tensor out = chw(image, "ColorJitter").clone();
    const int ch = channels(out);
    const Planes x{out.data<float>(), static_cast<std::size_t>(rows(out)) * cols(out)};
    for (int step : p.order) {
        if (step == 0) adjust_brightness(x, ch, p.brightness);
        else if (step == 1) adjust_contrast(x, ch, p.contrast);
        else if (step == 2) adjust_saturation(x, ch, p.saturation);
        else adjust_hue(x, ch, p.hue);
    }
    return out;
}

ColorJitter::ColorJitter(float brightness, float contrast, float saturation, float hue)
    : brightness_(brightness), contrast_(contrast), saturation_(saturation), hue_(hue) {
    check(brightness >= 0 && contrast >= 0 && saturation >= 0, "ColorJitter: factors must be non-negative");
    check(hue >= 0 && hue <= 0.5f, "ColorJitter: hue must be in [0, 0.5]");
}

JitterParams ColorJitter::sample(Rng& rng) const {
    JitterParams p;
    const std::vector<std::size_t> order = rng.permutation(4);
    for (int i = 0; i < 4; ++i) p.order[i] = static_cast<int>(order[i]);
    const auto factor = [&](float x) { return static_cast<float>(rng.uniform(std::max(0.0f, 1 - x), 1 + x)); };
    p.brightness = factor(brightness_);
    p.contrast = factor(contrast_);
    p.saturation = factor(saturation_);
    p.hue = static_cast<float>(rng.uniform(-hue_, hue_));
    return p;
}

Tensor ColorJitter::apply(const Tensor& image, Rng& rng) const { return color_jitter(image, sample(rng)); }

}  // namespace gl
