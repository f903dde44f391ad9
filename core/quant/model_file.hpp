/// @file
/// @brief Saved models, float and INT8, in one binary format with a version and
/// checksums (claim Q-1: the INT8 file is about 4x smaller).
///
/// Owns: the `.glm` file format and reading and writing it. Loading checks everything
/// before it trusts anything: a file that is not a gradlab model, of another version,
/// truncated, or with a flipped bit stops with a gl::Error that says which and what to
/// do, and a save goes to a temporary name first, so an interrupted save leaves the old
/// file whole.
///
/// The format (all integers little-endian):
///
///     header   8 bytes  magic "GLMODEL\0"
///              u32      version: 1, or 2 when the file has convolution records
///              u32      kind: 0 float model, 1 INT8 model
///              u32      number of records
///              u32      CRC-32 of the 20 bytes above
///     record   u32      name length, then the name (UTF-8, at most 256 bytes)
///              u8       element type: 0 float32, 1 int8, 2 int32
///              u8       rank (at most 8), then rank x i64 dimensions
///              u32      number of quantization parameter sets, then each as
///                       f32 scale, i32 zero point
///              u64      payload bytes (= elements x element size), then the payload
///              u32      CRC-32 of the record from its name length to its payload's end
///     trailer  8 bytes  "GLMEND\0\0"
///              u64      bytes before the trailer
///              u32      CRC-32 of every byte before the trailer
///
/// A float model is its named parameters ("0.weight", ...). An INT8 model is, per layer
/// L: "L.weight" (int8 [out, in], one parameter set per tensor or per row), "L.bias"
/// (int32 [out]), "L.input" (an empty float32 tensor carrying the input's parameters),
/// "L.output" (the same for the output) and "L.flags" (int32 [2]: relu, has_output).
///
/// An INT8 CNN (version 2) starts with "input" (int32 [3]: the images' channels, height,
/// width), then per convolution L: "L.conv" (int32 [5]: kernel, stride, padding, max-pool
/// window or 1, relu), "L.weight" (int8 [out, kernel, kernel, in], the NHWC patch order
/// of quantized_cnn.hpp; one parameter set per tensor or per filter), "L.bias" (int32
/// [out]), "L.input", "L.output"; then its Linear layers as above, numbered on from the
/// convolutions, the first one taking the flattened NHWC activations.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "nn/module.hpp"
#include "numerics/quantize.hpp"
#include "quant/quantized_cnn.hpp"
#include "quant/quantized_mlp.hpp"

namespace gl::quant {

/// What a model file holds.
enum class ModelKind : std::uint32_t { Float = 0, Int8 = 1 };

/// Element types of a record.
enum class RecordType : std::uint8_t { Float32 = 0, Int8 = 1, Int32 = 2 };

/// One named array of a model file.
struct ModelRecord {
    std::string name;                  ///< "0.weight", ...
    RecordType type = RecordType::Float32;  ///< element type
    std::vector<std::int64_t> shape;   ///< dimensions
    std::vector<QParams> qparams;      ///< quantization parameters (may be empty)
    std::vector<std::uint8_t> payload; ///< the elements, little-endian
};

/// Writes @p records to @p path (through a temporary file and a rename).
void save_records(const std::string& path, ModelKind kind, const std::vector<ModelRecord>& records);
/// Reads and checks a model file; throws gl::Error saying what is wrong with it.
std::vector<ModelRecord> load_records(const std::string& path, ModelKind& kind);

/// Saves @p model's parameters (float32) to @p path.
void save_float_model(const nn::Module& model, const std::string& path);
/// Loads parameters saved by save_float_model into @p model, which must have the same
/// names and shapes (throws gl::Error naming the first difference).
void load_float_model(nn::Module& model, const std::string& path);
/// Saves an INT8 model.
void save_quantized_model(const QuantizedMlp& model, const std::string& path);
/// Loads an INT8 MLP (throws gl::Error for an INT8 CNN: load_quantized_cnn).
QuantizedMlp load_quantized_model(const std::string& path);
/// Saves an INT8 CNN (version 2: convolution records).
void save_quantized_model(const QuantizedCnn& model, const std::string& path);
/// Loads an INT8 CNN, checking that its layers fit together.
QuantizedCnn load_quantized_cnn(const std::string& path);
/// Whether @p path holds an INT8 CNN (checks the whole file).
bool is_quantized_cnn(const std::string& path);
/// Whether @p path holds a float model with a convolution (a 4-d parameter).
bool is_float_cnn(const std::string& path);
/// The kind of model in @p path (checks the header only).
ModelKind model_kind(const std::string& path);

}  // namespace gl::quant
