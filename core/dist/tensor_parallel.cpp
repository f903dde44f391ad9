// Tensor parallelism: see tensor_parallel.hpp. The two collectives are autograd ops, so
// a tensor-parallel model trains with the ordinary backward() and optimizer.
#include "dist/tensor_parallel.hpp"

#include <cstring>

#include "autograd/grad_mode.hpp"
#include "autograd/node.hpp"
#include "dist/collectives.hpp"
#include "ops/ops.hpp"

namespace gl::dist {
namespace {

/// Sums a float32 tensor over the ranks, in place, with the ring (whose bytes the
/// counters can be checked against).
void all_reduce_tensor(Communicator& comm, Tensor& t) {
    check(t.dtype() == DType::Float32 && t.is_contiguous(), "tensor parallelism: expected a contiguous float32 tensor");
    all_reduce(comm, t.raw_data(), static_cast<std::size_t>(t.numel()), DType::Float32, AllReduceAlgo::Ring);
}

void check_host(const Communicator& comm) {
    check(!comm.memory_is_device(),
          "tensor parallelism works on host tensors (the threads and MPI backends); the " + comm.backend() +
              " backend's buffers are on the GPU");
}

/// Backward of f: the input every rank used whole receives the sum of the ranks'
/// gradients (each rank's gradient covers only its own output features).
struct CopyToTensorParallelBackward final : Node {
    Communicator* comm = nullptr;
    std::string name() const override { return "CopyToTensorParallelBackward"; }
    std::vector<Tensor> backward(const Tensor& grad_output) override {
        // LAB 09 BEGIN: f's backward: the input's gradient, summed over the ranks
        // all_reduce_tensor sums a contiguous float32 tensor in place; do not change
        // grad_output itself (other nodes may hold it).
        Tensor sum = grad_output.contiguous().clone();
        all_reduce_tensor(*comm, sum);
        return {sum};
        // LAB 09 END
    }
};

/// Backward of g: every rank's partial sum contributed to the output with weight one,
/// so each receives the output's gradient unchanged (no communication).
struct ReduceFromTensorParallelBackward final : Node {
    std::string name() const override { return "ReduceFromTensorParallelBackward"; }
    std::vector<Tensor> backward(const Tensor& grad_output) override {
        // LAB 09 BEGIN: g's backward: what each rank's partial sum receives
        return {grad_output};
        // LAB 09 END
    }
};

}  // namespace

Tensor copy_to_tensor_parallel(const Tensor& x, Communicator& comm) {
    // LAB 09 BEGIN: f's forward: the same values, recorded so backward sums the gradient
    // Return a detached handle of x; when x needs a gradient (should_record), record a
    // CopyToTensorParallelBackward node on it (record(out, node, {x})).
    Tensor out = x.detach();  // no communication in forward
    if (should_record({x})) {
        auto node = std::make_shared<CopyToTensorParallelBackward>();
        node->comm = &comm;
        record(out, node, {x});
    }
    return out;
    // LAB 09 END
}

Tensor reduce_from_tensor_parallel(const Tensor& x, Communicator& comm) {
    // LAB 09 BEGIN: g's forward: sum the partial products over the ranks
    // Sum a copy (x itself may be saved by the matmul's backward) and record a
    // ReduceFromTensorParallelBackward node when x needs a gradient.
    Tensor out = x.contiguous().detach().clone();
    all_reduce_tensor(comm, out);
    if (should_record({x})) record(out, std::make_shared<ReduceFromTensorParallelBackward>(), {x});
    return out;
    // LAB 09 END
}

/// Copies a [rows, cols] block of a 2-D tensor starting at (row0, col0) into a new leaf.
Tensor copy_block(const Tensor& t, std::int64_t row0, std::int64_t rows, std::int64_t col0, std::int64_t cols) {
    check(t.dim() == 2 && row0 >= 0 && rows >= 0 && row0 + rows <= t.size(0) && col0 >= 0 && cols >= 0 &&
              col0 + cols <= t.size(1),
          "copy_block: rows [" + std::to_string(row0) + ", " + std::to_string(row0 + rows) + ") and columns [" +
              std::to_string(col0) + ", " + std::to_string(col0 + cols) + ") do not fit in " + shape_str(t.shape()));
    const Tensor src = t.detach().contiguous();
    Tensor out = empty({rows, cols}, t.dtype());
    const std::size_t elem = size_of(t.dtype());
    const auto* from = static_cast<const char*>(src.raw_data());
    auto* to = static_cast<char*>(out.raw_data());
    for (std::int64_t r = 0; r < rows; ++r)  // one contiguous run of cols elements per row
        std::memcpy(to + static_cast<std::size_t>(r * cols) * elem,
                    from + static_cast<std::size_t>((row0 + r) * t.size(1) + col0) * elem,
                    static_cast<std::size_t>(cols) * elem);
    return out;
}

Tensor copy_rows(const Tensor& t, std::int64_t begin, std::int64_t count) {
    check(t.dim() == 2, "copy_rows: expected a 2-D tensor, got " + shape_str(t.shape()));
    return copy_block(t, begin, count, 0, t.size(1));
}

Tensor copy_columns(const Tensor& t, std::int64_t begin, std::int64_t count) {
    check(t.dim() == 2, "copy_columns: expected a 2-D tensor, got " + shape_str(t.shape()));
    return copy_block(t, 0, t.size(0), begin, count);
}

namespace {

/// This rank's share of @p n features: ring_chunk's split, so sizes may differ by one.
Chunk my_features(std::int64_t n, const Communicator& comm) {
    return ring_chunk(static_cast<std::size_t>(n), comm.size(), comm.rank());
}

std::int64_t i64(std::size_t v) { return static_cast<std::int64_t>(v); }

}  // namespace

ColumnParallelLinear::ColumnParallelLinear(const nn::Linear& full, Communicator& comm) : comm_(comm) {
    check_host(comm);
    const Chunk rows = my_features(full.weight.size(0), comm);
    weight = register_parameter("weight", copy_rows(full.weight, i64(rows.begin), i64(rows.count)));
    if (full.bias.defined()) {
        const Tensor b = reshape(full.bias.detach(), {1, full.bias.numel()});
        bias = register_parameter("bias", reshape(copy_columns(b, i64(rows.begin), i64(rows.count)), {i64(rows.count)}));
    }
}

std::string ColumnParallelLinear::describe() const {
    return "ColumnParallelLinear(" + std::to_string(weight.size(1)) + " -> " + std::to_string(weight.size(0)) +
           " of the outputs, rank " + std::to_string(comm_.rank()) + " of " + std::to_string(comm_.size()) + ")";
}

RowParallelLinear::RowParallelLinear(const nn::Linear& full, Communicator& comm) : comm_(comm) {
    check_host(comm);
    const Chunk cols = my_features(full.weight.size(1), comm);
    weight = register_parameter("weight", copy_columns(full.weight, i64(cols.begin), i64(cols.count)));
    if (full.bias.defined()) bias = register_parameter("bias", full.bias.detach().clone());
}

std::string RowParallelLinear::describe() const {
    return "RowParallelLinear(" + std::to_string(weight.size(1)) + " of the inputs -> " +
           std::to_string(weight.size(0)) + ", rank " + std::to_string(comm_.rank()) + " of " +
           std::to_string(comm_.size()) + ")";
}

Tensor ColumnParallelLinear::forward(const Tensor& x) {
    check(x.dim() == 2 && x.size(1) == weight.size(1),
          describe() + ": expected input [batch, " + std::to_string(weight.size(1)) + "], got " + shape_str(x.shape()));
    // LAB 09 BEGIN: column-parallel forward: this rank's output features
    // f: x is whole on every rank; its gradient must be summed over the ranks in backward.
    const Tensor y = matmul(copy_to_tensor_parallel(x, comm_), t(weight));  // [B, out_r]
    return bias.defined() ? y + bias : y;
    // LAB 09 END
}

Tensor RowParallelLinear::forward(const Tensor& x) {
    check(x.dim() == 2 && x.size(1) == weight.size(1),
          describe() + ": expected this rank's input features [batch, " + std::to_string(weight.size(1)) +
              "], got " + shape_str(x.shape()));
    // LAB 09 BEGIN: row-parallel forward: partial sums over this rank's input features
    // g: each rank's product is a partial sum over its input features; sum, then add the
    // bias once (adding it before the all-reduce would count it N times).
    const Tensor y = reduce_from_tensor_parallel(matmul(x, t(weight)), comm_);  // [B, out]
    return bias.defined() ? y + bias : y;
    // LAB 09 END
}

TensorParallelMlp::TensorParallelMlp(const nn::Linear& first, const nn::Linear& second, Communicator& comm)
    : column_(std::make_shared<ColumnParallelLinear>(first, comm)),
      row_(std::make_shared<RowParallelLinear>(second, comm)) {
    check(first.weight.size(0) == second.weight.size(1),
          "TensorParallelMlp: the first layer's outputs (" + std::to_string(first.weight.size(0)) +
              ") must be the second's inputs (" + std::to_string(second.weight.size(1)) + ")");
    register_module("column", column_);
    register_module("row", row_);
}

Tensor TensorParallelMlp::forward(const Tensor& x) { return row_->forward(relu(column_->forward(x))); }

std::string TensorParallelMlp::describe() const {
    return "TensorParallelMlp(" + column_->describe() + ", ReLU, " + row_->describe() + ")";
}

namespace {

/// The leaf layers of a Sequential, nested Sequentials opened.
void flatten(const nn::Sequential& seq, std::vector<const nn::Module*>& out) {
    for (std::size_t i = 0; i < seq.size(); ++i) {
        const nn::Module& m = seq.at(i);
        if (const auto* inner = dynamic_cast<const nn::Sequential*>(&m)) flatten(*inner, out);
        else out.push_back(&m);
    }
}

}  // namespace

std::shared_ptr<nn::Sequential> tensor_parallel_mlp(const nn::Sequential& full, Communicator& comm) {
    std::vector<const nn::Module*> layers;
    flatten(full, layers);
    const auto linear_at = [&](std::size_t i) -> const nn::Linear& {
        const auto* l = i < layers.size() ? dynamic_cast<const nn::Linear*>(layers[i]) : nullptr;
        check(l != nullptr, "tensor_parallel_mlp: expected Linear, ReLU, Linear[, ReLU, Linear, ReLU, Linear...], but "
                            "layer " + std::to_string(i) + " is " + (i < layers.size() ? layers[i]->describe() : "missing") +
                            " in " + full.describe());
        return *l;
    };
    auto out = std::make_shared<nn::Sequential>();
    // Layers come in blocks of four: Linear, ReLU, Linear, then ReLU before the next block.
    for (std::size_t i = 0; i < layers.size(); i += 4) {
        const nn::Linear& first = linear_at(i);
        check(i + 1 < layers.size() && dynamic_cast<const nn::ReLU*>(layers[i + 1]),
              "tensor_parallel_mlp: layer " + std::to_string(i + 1) + " must be a ReLU in " + full.describe());
        out->add(std::make_shared<TensorParallelMlp>(first, linear_at(i + 2), comm));
        if (i + 3 < layers.size()) {
            check(dynamic_cast<const nn::ReLU*>(layers[i + 3]),
                  "tensor_parallel_mlp: layer " + std::to_string(i + 3) + " must be a ReLU in " + full.describe());
            out->add(std::make_shared<nn::ReLU>());
        }
    }
    return out;
}

std::uint64_t tensor_parallel_mlp_bytes(std::int64_t batch, std::int64_t in, std::int64_t out, int n, int rank,
                                        bool input_needs_grad) {
    const auto ring = [&](std::int64_t count) {
        return allreduce_bytes_sent(AllReduceAlgo::Ring, static_cast<std::size_t>(count), sizeof(float), n, rank);
    };
    return ring(batch * out) + (input_needs_grad ? ring(batch * in) : 0);
}

}  // namespace gl::dist
