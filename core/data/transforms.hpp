/// @file
/// @brief Image transforms for training and validation pipelines, composable like
/// torchvision's: ToTensor, Normalize, Resize, CenterCrop, RandomResizedCrop,
/// RandomHorizontalFlip, ColorJitter, Compose.
///
/// Owns: what each transform does to a float image [C, H, W] with values in [0, 1], and
/// how the random ones draw their parameters from the sample's generator (dataset.hpp's
/// sample_rng), so that augmentation is reproducible per sample. Each random transform
/// splits into sampling its parameters and applying them, so tests can compare the
/// application with torchvision's given the same parameters. Knows nothing about files
/// or loaders.
///
/// Training: Compose{RandomResizedCrop(s), RandomHorizontalFlip, ColorJitter, Normalize};
/// validation: Compose{Resize(s'), CenterCrop(s), Normalize}.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "base/rng.hpp"
#include "data/image_codec.hpp"
#include "tensor/tensor.hpp"

namespace gl {

/// ToTensor: 8-bit pixels (HWC) to float32 [C, H, W] in [0, 1] (byte / 255).
Tensor to_tensor(const Image& image);

/// A step of an image pipeline on float [C, H, W] tensors.
class Transform {
public:
    virtual ~Transform() = default;
    /// The transformed image; random transforms draw from @p rng.
    virtual Tensor apply(const Tensor& image, Rng& rng) const = 0;
    /// The shape apply() returns for an input of shape @p in (throws if it cannot apply).
    virtual Shape output_shape(const Shape& in) const = 0;
};

/// Applies transforms in order.
class Compose : public Transform {
public:
    /// The steps, first applied first.
    explicit Compose(std::vector<std::shared_ptr<const Transform>> steps);
    /// Each step's apply, in order.
    Tensor apply(const Tensor& image, Rng& rng) const override;
    /// Each step's output_shape, in order.
    Shape output_shape(const Shape& in) const override;

private:
    std::vector<std::shared_ptr<const Transform>> steps_;
};

/// (x - mean[c]) / std[c] per channel.
class Normalize : public Transform {
public:
    /// One mean and one standard deviation (positive) per channel.
    Normalize(std::vector<float> mean, std::vector<float> stddev);
    /// The normalised image.
    Tensor apply(const Tensor& image, Rng& rng) const override;
    /// @p in (channels must match).
    Shape output_shape(const Shape& in) const override;

private:
    std::vector<float> mean_, stddev_;
};

/// A rectangle of an image: rows top..top+height-1, columns left..left+width-1.
struct CropBox {
    int top = 0;     ///< first row
    int left = 0;    ///< first column
    int height = 0;  ///< rows (positive)
    int width = 0;   ///< columns (positive)
};

/// Bilinear resize of the @p box of @p image to @p out_h x @p out_w, sampling at pixel
/// centres (PyTorch's align_corners = false) without antialiasing: torchvision's
/// resized_crop(..., antialias=False). (torchvision's default for tensors is now
/// antialias = True, which averages over the footprint when shrinking: the two agree when
/// enlarging and differ when shrinking by more than 2x.)
Tensor resized_crop(const Tensor& image, const CropBox& box, int out_h, int out_w);

/// Resize to a fixed size (bilinear, no antialias).
class Resize : public Transform {
public:
    /// Output @p height x @p width.
    Resize(int height, int width);
    /// The resized image.
    Tensor apply(const Tensor& image, Rng& rng) const override;
    /// [C, height, width].
    Shape output_shape(const Shape& in) const override;

private:
    int height_, width_;
};

/// The central @p height x @p width pixels (torchvision's rounding of the offsets).
class CenterCrop : public Transform {
public:
    /// Output @p height x @p width; the input must be at least that large.
    CenterCrop(int height, int width);
    /// The cropped image.
    Tensor apply(const Tensor& image, Rng& rng) const override;
    /// [C, height, width].
    Shape output_shape(const Shape& in) const override;

private:
    int height_, width_;
};

/// A random part of the image (area fraction in @p scale, aspect ratio in @p ratio,
/// log-uniform) resized to a fixed size: the training crop of the ImageNet recipe.
class RandomResizedCrop : public Transform {
public:
    /// Output @p height x @p width; torchvision's defaults for scale and ratio.
    RandomResizedCrop(int height, int width, float scale_lo = 0.08f, float scale_hi = 1.0f,
                      float ratio_lo = 3.0f / 4.0f, float ratio_hi = 4.0f / 3.0f);
    /// torchvision's get_params: up to 10 tries of (area, log-ratio) that fit, else the
    /// largest centred box within the ratio range.
    CropBox sample_box(int in_h, int in_w, Rng& rng) const;
    /// resized_crop(image, sample_box(...)).
    Tensor apply(const Tensor& image, Rng& rng) const override;
    /// [C, height, width].
    Shape output_shape(const Shape& in) const override;

private:
    int height_, width_;
    float scale_lo_, scale_hi_, ratio_lo_, ratio_hi_;
};

/// Mirrors the image left-right with probability p.
class RandomHorizontalFlip : public Transform {
public:
    /// Flip probability @p p in [0, 1].
    explicit RandomHorizontalFlip(float p = 0.5f);
    /// The image, mirrored or not.
    Tensor apply(const Tensor& image, Rng& rng) const override;
    /// @p in.
    Shape output_shape(const Shape& in) const override { return in; }

private:
    float p_;
};

/// The drawn factors of one ColorJitter application, in the order they are applied.
struct JitterParams {
    int order[4] = {0, 1, 2, 3};  ///< 0 brightness, 1 contrast, 2 saturation, 3 hue
    float brightness = 1.0f;      ///< multiply by this
    float contrast = 1.0f;        ///< blend with the mean grey level
    float saturation = 1.0f;      ///< blend with the grey image
    float hue = 0.0f;             ///< shift hue by this fraction of a turn
};

/// Applies @p p to an image (torchvision's adjust_brightness/contrast/saturation/hue in
/// p.order; saturation and hue leave a 1-channel image unchanged).
Tensor color_jitter(const Tensor& image, const JitterParams& p);

/// Random brightness, contrast, saturation and hue, in a random order.
class ColorJitter : public Transform {
public:
    /// Factors drawn from [max(0, 1 - x), 1 + x] for the first three, hue from [-hue, hue] (hue <= 0.5).
    ColorJitter(float brightness, float contrast, float saturation, float hue);
    /// Draws the order and the factors (torchvision's get_params).
    JitterParams sample(Rng& rng) const;
    /// color_jitter(image, sample(rng)).
    Tensor apply(const Tensor& image, Rng& rng) const override;
    /// @p in.
    Shape output_shape(const Shape& in) const override { return in; }

private:
    float brightness_, contrast_, saturation_, hue_;
};

}  // namespace gl
