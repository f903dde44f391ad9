/// @file
/// @brief Runs torchvision's functional transforms on an image, for peer comparisons of
/// gradlab's transforms (tools/peers/transforms_torchvision.py does the torchvision side).
#pragma once

#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>
#include <vector>

#include "data/transforms.hpp"
#include "tensor/tensor.hpp"

namespace gl::testkit {

/// An image and the ops to apply to it, each on its own (the script's JSON op list).
struct TorchvisionCase {
    Tensor image;        ///< float32 [C, H, W]
    nlohmann::json ops;  ///< e.g. [{"op": "hflip"}]
};

/// What torchvision returned: per case, one tensor per op.
struct TorchvisionRun {
    bool available = false;                    ///< false: torch or torchvision is not installed (see why_not)
    std::string why_not;                       ///< the reason it did not run
    std::string version;                       ///< torchvision's version
    std::vector<std::vector<Tensor>> outputs;  ///< [case][op], float32
};

/// The peer script in the source tree this binary was built from.
std::filesystem::path torchvision_peer_script();

/// Applies each case's ops to its image with torchvision, in one run of the script
/// through /usr/bin/python3 (Debian's python3-torchvision) or python3. Throws gl::Error
/// if the script fails for another reason than a missing torchvision.
TorchvisionRun run_torchvision(const std::vector<TorchvisionCase>& cases);

/// The largest |a - b| of two tensors of one shape (infinity if the shapes differ).
double max_abs_difference(const Tensor& a, const Tensor& b);

/// One transform with one set of parameters, ours against torchvision's.
struct TransformComparison {
    std::string what;               ///< "resized_crop {3,5,21,17} -> 24x24, 3 channels"
    double max_difference = 0;      ///< the largest per-pixel difference
    bool should_match = true;       ///< false: a known difference (antialias=True when shrinking)
};

/// Every comparison of the transforms with torchvision (core/data/transforms.hpp), in one
/// run of the peer script: resized crops (shrinking and enlarging, odd sizes), Resize,
/// CenterCrop, the flip, ColorJitter with parameters drawn from @p seed, Normalize, on a
/// colour and a grey image; and Resize against antialias=True, shrinking 4x (differs)
/// and enlarging 2x (matches).
struct TransformPeerReport {
    bool available = false;                ///< false: torchvision is absent (why_not)
    std::string why_not;                   ///< the reason
    std::string version;                   ///< torchvision's version
    std::vector<TransformComparison> rows; ///< one per transform and parameter set
};
/// Runs every comparison (see TransformPeerReport).
TransformPeerReport compare_transforms_with_torchvision(std::uint64_t seed);

}  // namespace gl::testkit
