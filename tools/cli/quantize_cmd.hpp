// The quantization commands of the gradlab program (claim Q-1): `quantize` (post-training
// quantization of a saved float model) and the QAT step of `train --qat`.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "data/dataset.hpp"
#include "nn/module.hpp"
#include "training/trainer.hpp"

namespace gl::cli {

/// Options of `gradlab quantize`.
struct QuantizeArgs {
    std::string model;             ///< float model file (train --save)
    std::string out;               ///< INT8 model file to write (optional)
    std::int64_t calibrate = 1000; ///< calibration examples (from the training set)
    std::string observer = "minmax";
    bool per_channel = false;      ///< weights per output channel (else per tensor)
    std::string data;              ///< MNIST-format folder (empty: Fashion-MNIST)
};

/// Loads the float model, calibrates, quantizes, reports FP32 and INT8 test accuracy and
/// the file sizes, and writes the INT8 model when asked.
int cmd_quantize(const QuantizeArgs& a);

/// `train --qat`: fine-tunes @p net with fake quantization for @p epochs epochs (the
/// float model's learning rate / 10), converts, prints the INT8 test accuracy, and saves
/// the INT8 model to @p save when it is not empty.
void qat_finetune(nn::Sequential& net, const std::shared_ptr<const Dataset>& train, const Dataset& test,
                  training::FitOptions fit, int epochs, bool per_channel, const std::string& save);

/// The size of @p path in bytes.
std::uintmax_t file_bytes(const std::string& path);

}  // namespace gl::cli
