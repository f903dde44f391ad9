// The ONNX commands of the gradlab program (claim DEPLOY-1): `export-onnx` (a float model
// saved by `gradlab train --save`, captured and written as ONNX) and `infer` (an ONNX
// model run by the static-graph executor, no autograd: the ahead-of-time path).
#pragma once

#include <cstdint>
#include <string>

namespace gl::cli {

/// Options of `gradlab export-onnx`.
struct ExportOnnxArgs {
    std::string model;             ///< float SimpleNet file (train --save)
    std::string out;               ///< ONNX file to write
    std::int64_t batch_size = 100; ///< the batch dimension of the exported graph
    std::string data;              ///< MNIST-format folder: its shape and classes (empty: Fashion-MNIST)
};

/// Loads the float model, captures its inference forward, writes it as ONNX, and checks
/// that the written file imports and gives the eager outputs on the first test batch.
int cmd_export_onnx(const ExportOnnxArgs& a);

/// Options of `gradlab infer`.
struct InferArgs {
    std::string model;             ///< ONNX file
    std::string data;              ///< MNIST-format folder (empty: Fashion-MNIST)
    std::int64_t batch_size = 100; ///< batch of a symbolic batch dimension (a fixed one wins)
    std::int64_t limit = 0;        ///< test examples to run (0: all)
};

/// Imports the ONNX model, plans it, runs it over the test set and prints the accuracy,
/// the load + plan time and the time per batch.
int cmd_infer(const InferArgs& a);

}  // namespace gl::cli
