/// @file
/// @brief Tensor parallelism (Megatron-LM): one matrix multiply split across workers,
/// with the same result as the unsplit layer (claim MP-1).
///
/// Owns: the two collectives of tensor parallelism as autograd ops, the column-parallel
/// and row-parallel Linear, and the MLP block made of one of each. For y = x W^T with W of
/// shape [out, in] on N workers:
///
/// - **column-parallel**: rank r holds rows ring_chunk(out, N, r) of W (a slice of the
///   output features) and computes its slice y_r = x W_r^T. The input x is needed whole
///   on every rank, so in backward the input gradients x-grad_r = y-grad_r W_r of the
///   ranks must be summed: an all-reduce in backward (Megatron's "f").
/// - **row-parallel**: rank r holds columns ring_chunk(in, N, r) of W (a slice of the
///   input features) and a slice x_r of the input; x_r W_r^T is a partial sum of y, so
///   the ranks all-reduce it in forward (Megatron's "g"); the bias is added once, after.
///
/// The MLP block Linear-ReLU-Linear becomes column-parallel, ReLU (element-wise, so it
/// works on each slice), row-parallel: the hidden activations never leave their rank,
/// and a step costs one all-reduce of [B, out] in forward and one of [B, in] in backward
/// (when the block's input needs a gradient). The layers are built by slicing the full
/// layer's weights, so a tensor-parallel model starts exactly where the unsplit one does.
///
/// Buffers are host memory: the thread and MPI backends. (NCCL would need the tensors
/// on the GPU; the block refuses a device communicator with a message.)
#pragma once

#include <memory>

#include "dist/communicator.hpp"
#include "nn/module.hpp"

namespace gl::dist {

/// Megatron's f: the identity in forward; in backward, all-reduces (sums) the gradient
/// over @p comm. Put before a column-parallel multiply whose input every rank holds.
Tensor copy_to_tensor_parallel(const Tensor& x, Communicator& comm);
/// Megatron's g: all-reduces (sums) @p x over @p comm in forward; the identity in
/// backward. Put after a row-parallel multiply, whose outputs are partial sums.
Tensor reduce_from_tensor_parallel(const Tensor& x, Communicator& comm);

/// Rows [begin, begin + count) of a 2-D tensor, as a new leaf (a copy).
Tensor copy_rows(const Tensor& t, std::int64_t begin, std::int64_t count);
/// Columns [begin, begin + count) of a 2-D tensor, as a new leaf (a copy).
Tensor copy_columns(const Tensor& t, std::int64_t begin, std::int64_t count);

/// Linear split by output features: rank r computes features ring_chunk(out, N, r).
class ColumnParallelLinear final : public nn::Module {
public:
    /// This rank's slice of @p full (weights and bias copied), over @p comm (which must
    /// outlive the layer).
    ColumnParallelLinear(const nn::Linear& full, Communicator& comm);
    /// [B, in] (the same on every rank) -> [B, out_r], this rank's output features.
    Tensor forward(const Tensor& x) override;
    std::string describe() const override;
    /// [out_r, in]: this rank's rows of the full weight.
    Tensor weight;
    /// [out_r]: this rank's part of the full bias (undefined if the layer has none).
    Tensor bias;

private:
    Communicator& comm_;
};

/// Linear split by input features: rank r holds input features ring_chunk(in, N, r).
class RowParallelLinear final : public nn::Module {
public:
    /// This rank's slice of @p full (weight columns; the whole bias), over @p comm.
    RowParallelLinear(const nn::Linear& full, Communicator& comm);
    /// [B, in_r] (this rank's input features) -> [B, out], the same on every rank.
    Tensor forward(const Tensor& x) override;
    std::string describe() const override;
    /// [out, in_r]: this rank's columns of the full weight.
    Tensor weight;
    /// [out]: the full bias, added once after the all-reduce.
    Tensor bias;

private:
    Communicator& comm_;
};

/// The Megatron MLP block: column-parallel, ReLU, row-parallel. [B, in] -> [B, out], the
/// same input and output on every rank.
class TensorParallelMlp final : public nn::Module {
public:
    /// Splits @p first (in -> hidden) by columns of its output and @p second (hidden ->
    /// out) by rows of its input.
    TensorParallelMlp(const nn::Linear& first, const nn::Linear& second, Communicator& comm);
    Tensor forward(const Tensor& x) override;
    std::string describe() const override;
    /// The first layer's slice.
    ColumnParallelLinear& column() { return *column_; }
    /// The second layer's slice.
    RowParallelLinear& row() { return *row_; }

private:
    std::shared_ptr<ColumnParallelLinear> column_;
    std::shared_ptr<RowParallelLinear> row_;
};

/// The tensor-parallel version of a Sequential of [Linear, ReLU, Linear, (ReLU, Linear,
/// ReLU, Linear)...] such as make_simple_net or make_deep_mlp gives, after flattening:
/// each Linear-ReLU-Linear pair becomes a TensorParallelMlp; throws gl::Error, saying
/// what it found, for any other layout.
std::shared_ptr<nn::Sequential> tensor_parallel_mlp(const nn::Sequential& full, Communicator& comm);

/// Payload bytes rank @p rank of @p n sends in one training step of a TensorParallelMlp
/// with batch @p batch: a ring all-reduce of [batch, out] floats in forward, and of
/// [batch, in] in backward when @p input_needs_grad.
std::uint64_t tensor_parallel_mlp_bytes(std::int64_t batch, std::int64_t in, std::int64_t out, int n, int rank,
                                        bool input_needs_grad);

}  // namespace gl::dist
