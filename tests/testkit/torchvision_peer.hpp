/// @file
/// @brief Runs torchvision's functional transforms on an image, for peer comparisons of
/// gradlab's transforms (tools/peers/transforms_torchvision.py does the torchvision side).
#pragma once

#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>
#include <vector>

#include "tensor/tensor.hpp"

namespace gl::testkit {

/// What torchvision returned: one tensor per op (each applied to the input on its own).
struct TorchvisionRun {
    bool available = false;        ///< false: torch or torchvision is not installed (see why_not)
    std::string why_not;           ///< the reason it did not run
    std::string version;           ///< torchvision's version
    std::vector<Tensor> outputs;   ///< one per op, float32
};

/// The peer script in the source tree this binary was built from.
std::filesystem::path torchvision_peer_script();

/// Applies each op of @p ops (the script's JSON op list) to @p image [C, H, W] with
/// torchvision, through /usr/bin/python3 (Debian's python3-torchvision) or python3.
/// Throws gl::Error if the script fails for another reason than a missing torchvision.
TorchvisionRun run_torchvision(const Tensor& image, const nlohmann::json& ops);

/// The largest |a - b| of two tensors of one shape (infinity if the shapes differ).
double max_abs_difference(const Tensor& a, const Tensor& b);

}  // namespace gl::testkit
