// DataParallel: the master's five steps (see dp.hpp), over send/recv so bytes count.
#include "dist/dp.hpp"

#include <cstring>

#include "dist/collectives.hpp"
#include "dist/flat_params.hpp"
#include "ops/ops.hpp"

namespace gl::dist {
namespace {

constexpr std::size_t kHeader = 8;  // rows, dims of one example, up to 5 extents, dtype

std::size_t row_bytes(const Tensor& t) {
    return static_cast<std::size_t>(t.numel() / t.size(0)) * size_of(t.dtype());
}

// A contiguous copy of rows [begin, begin + count) of a contiguous tensor.
Tensor copy_rows(const Tensor& t, std::int64_t begin, std::int64_t count) {
    Shape shape = t.shape();
    shape[0] = count;
    Tensor out = empty(shape, t.dtype());
    const std::size_t rb = row_bytes(t);
    std::memcpy(out.raw_data(), static_cast<const std::byte*>(t.raw_data()) + static_cast<std::size_t>(begin) * rb,
                static_cast<std::size_t>(count) * rb);
    return out;
}

const std::byte* row_ptr(const Tensor& t, std::int64_t row) {
    return static_cast<const std::byte*>(t.raw_data()) + static_cast<std::size_t>(row) * row_bytes(t);
}

std::int64_t count_correct(const Tensor& logits, const Tensor& targets) {
    const Tensor predicted = argmax(logits);
    const auto p = predicted.to_vector<std::int32_t>();
    const auto t = targets.to_vector<std::int32_t>();
    std::int64_t correct = 0;
    for (std::size_t i = 0; i < p.size(); ++i) correct += p[i] == t[i];
    return correct;
}

}  // namespace

DataParallel::DataParallel(std::shared_ptr<nn::Module> model, Communicator& comm)
    : model_(std::move(model)), comm_(comm) {
    check(model_ != nullptr, "DataParallel: the model is null");
    check(!comm_.memory_is_device(), "DataParallel: the " + comm_.backend() +
                                         " backend works on GPU buffers; this model lives in host memory");
    params_ = model_->parameters();
    flat_count_ = flat_size(params_, dtype_);
    flat_ = comm_.allocate(flat_count_ * size_of(dtype_));
}

DpStepResult DataParallel::step(const Batch& batch, optim::Optimizer* optimizer) {
    if (comm_.rank() == 0) {
        check(optimizer != nullptr && batch.inputs.defined(),
              "DataParallel::step: the master (rank 0) needs the global batch and the optimizer");
        return master_step(batch, *optimizer);
    }
    replica_step();
    return {};
}

DpStepResult DataParallel::master_step(const Batch& batch, optim::Optimizer& optimizer) {
    const int n = comm_.size();
    const std::size_t flat_bytes = flat_count_ * size_of(dtype_);
    const Tensor inputs = batch.inputs.contiguous(), targets = batch.targets.contiguous();
    const std::int64_t rows = inputs.size(0);
    check(rows >= n, "DataParallel: a batch of " + std::to_string(rows) + " rows cannot be split over " +
                         std::to_string(n) + " ranks");
    check(inputs.dim() <= 6, "DataParallel: inputs of more than 6 dimensions cannot be scattered");
    optimizer.zero_grad();

    // 1. Replicate: the whole model to every replica, one after the other.
    params_to_flat(params_, flat_.get());
    for (int r = 1; r < n; ++r) comm_.send(flat_.get(), flat_bytes, r);

    // 2. Scatter the batch.
    const auto slice = [&](int r) { return ring_chunk(static_cast<std::size_t>(rows), n, r); };
    for (int r = 1; r < n; ++r) {
        const Chunk c = slice(r);
        std::int64_t header[kHeader] = {static_cast<std::int64_t>(c.count), inputs.dim() - 1};
        for (std::int64_t d = 1; d < inputs.dim(); ++d) header[1 + d] = inputs.size(d);
        header[kHeader - 1] = static_cast<std::int64_t>(inputs.dtype());
        comm_.send(header, sizeof(header), r);
        comm_.send(row_ptr(inputs, static_cast<std::int64_t>(c.begin)), c.count * row_bytes(inputs), r);
    }

    // 3. Forward on every rank; gather the outputs; the loss and its backward on the master.
    const Chunk mine = slice(0);
    const Tensor my_logits = model_->forward(copy_rows(inputs, 0, static_cast<std::int64_t>(mine.count)));
    const std::int64_t classes = my_logits.size(1);
    Tensor all_logits = empty({rows, classes}, my_logits.dtype());
    std::memcpy(all_logits.raw_data(), my_logits.raw_data(), mine.count * row_bytes(my_logits));
    for (int r = 1; r < n; ++r) {
        const Chunk c = slice(r);
        comm_.recv(const_cast<std::byte*>(row_ptr(all_logits, static_cast<std::int64_t>(c.begin))),
                   c.count * row_bytes(all_logits), r);
    }
    all_logits.set_requires_grad();
    const Tensor loss = cross_entropy(all_logits, targets);
    loss.backward();
    const Tensor grad_logits = all_logits.grad();
    for (int r = 1; r < n; ++r) {
        const Chunk c = slice(r);
        comm_.send(row_ptr(grad_logits, static_cast<std::int64_t>(c.begin)), c.count * row_bytes(grad_logits), r);
    }

    // 4. Backward through the master's own replica; gather and add the replicas' gradients.
    my_logits.backward(copy_rows(grad_logits, 0, static_cast<std::int64_t>(mine.count)));
    grads_to_flat(params_, flat_.get());
    void* incoming = comm_.scratch(flat_bytes);
    for (int r = 1; r < n; ++r) {
        comm_.recv(incoming, flat_bytes, r);
        comm_.reduce_add(flat_.get(), incoming, flat_count_, dtype_);
    }
    flat_to_grads(flat_.get(), params_);

    // 5. Only the master updates.
    optimizer.step();
    return {loss.item(), count_correct(all_logits, targets), rows};
}

void DataParallel::replica_step() {
    const std::size_t flat_bytes = flat_count_ * size_of(dtype_);
    comm_.recv(flat_.get(), flat_bytes, 0);
    flat_to_params(flat_.get(), params_);
    for (Tensor& p : params_) p.set_grad(Tensor());

    std::int64_t header[kHeader] = {};
    comm_.recv(header, sizeof(header), 0);
    Shape shape{header[0]};
    for (std::int64_t d = 0; d < header[1]; ++d) shape.push_back(header[2 + d]);
    Tensor x = empty(shape, static_cast<DType>(header[kHeader - 1]));
    comm_.recv(x.raw_data(), static_cast<std::size_t>(x.numel()) * size_of(x.dtype()), 0);

    const Tensor logits = model_->forward(x);
    comm_.send(logits.contiguous().raw_data(), static_cast<std::size_t>(logits.numel()) * size_of(logits.dtype()), 0);
    Tensor grad_logits = empty(logits.shape(), logits.dtype());
    comm_.recv(grad_logits.raw_data(), static_cast<std::size_t>(grad_logits.numel()) * size_of(logits.dtype()), 0);
    logits.backward(grad_logits);

    grads_to_flat(params_, flat_.get());
    comm_.send(flat_.get(), flat_bytes, 0);
}

}  // namespace gl::dist
