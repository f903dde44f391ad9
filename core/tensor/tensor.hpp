/// @file
/// @brief The n-dimensional array at the centre of the library, and how to create one.
///
/// Owns: shape, strides, dtype, device and the link to storage; element access; the
/// fields autograd reads and writes (requires_grad, grad, grad_fn). The tensor does not
/// know how gradients are computed (autograd/) or what ops exist (ops/).
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "base/error.hpp"
#include "tensor/dtype.hpp"
#include "tensor/storage.hpp"

namespace gl {

class Rng;
class Node;
class Tensor;

/// A tensor's shape: one extent per dimension, outermost first.
using Shape = std::vector<std::int64_t>;

/// Number of elements of a tensor of shape @p shape (1 for a scalar, shape {}).
std::int64_t numel_of(const Shape& shape);
/// Row-major (C order) strides for @p shape, in elements.
Shape contiguous_strides(const Shape& shape);
/// "[2, 3]" for messages.
std::string shape_str(const Shape& shape);

/// What a tensor handle points to. Shared by every handle that copies it.
struct TensorImpl {
    std::shared_ptr<Storage> storage;   ///< the bytes (shared between views)
    std::int64_t offset = 0;            ///< first element, in elements from storage start
    Shape shape;                        ///< extents
    Shape strides;                      ///< elements to skip per step in each dimension
    DType dtype = DType::Float32;       ///< element type
    bool requires_grad = false;         ///< leaf: accumulate a gradient into grad
    std::shared_ptr<TensorImpl> grad;   ///< accumulated gradient (leaves), may be null
    std::shared_ptr<Node> grad_fn;      ///< the op that made this tensor (non-leaves)
    std::weak_ptr<Node> grad_accumulator;  ///< leaves: the node that accumulates into grad
    /// Called with each gradient accumulated into a leaf, in the order they arrive
    /// (used by distributed training to start communication early).
    std::vector<std::function<void(const Tensor&)>> grad_hooks;
};

/// A handle to an n-dimensional array. Copying a Tensor copies the handle, not the data
/// (like torch.Tensor); use clone() for a deep copy.
class Tensor {
public:
    /// An undefined tensor (no storage); defined() is false.
    Tensor() = default;
    /// Wraps an existing implementation (used by factories and views).
    explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}

    /// False for a default-constructed tensor, e.g. a gradient that was never computed.
    bool defined() const { return impl_ != nullptr; }
    /// Extents, outermost first.
    const Shape& shape() const { return impl().shape; }
    /// Elements to skip per step in each dimension.
    const Shape& strides() const { return impl().strides; }
    /// Number of dimensions.
    std::int64_t dim() const { return static_cast<std::int64_t>(impl().shape.size()); }
    /// Extent of dimension @p d; negative @p d counts from the end.
    std::int64_t size(std::int64_t d) const;
    /// Number of elements.
    std::int64_t numel() const { return numel_of(impl().shape); }
    /// Element type.
    DType dtype() const { return impl().dtype; }
    /// Where the data lives.
    Device device() const { return impl().storage->device(); }
    /// True when the elements are laid out densely in row-major order.
    bool is_contiguous() const;
    /// Offset of the first element in its storage, in elements.
    std::int64_t storage_offset() const { return impl().offset; }
    /// The storage (shared with views).
    const std::shared_ptr<Storage>& storage() const { return impl().storage; }

    /// Typed pointer to the first element, for CPU code; throws if T does not match
    /// dtype() or if the tensor lives on a device (move it with cpu() first).
    template <class T>
    T* data() const;
    /// Untyped pointer to the first element, for CPU code; throws for a device tensor.
    void* raw_data() const;
    /// Typed pointer to the first element on whatever device the tensor lives (a device
    /// pointer for kernels of that device; never dereference it on the host).
    template <class T>
    T* data_ptr() const;
    /// Untyped pointer to the first element on the tensor's device.
    void* raw_data_ptr() const;

    /// This tensor on @p device: itself when it is already there, else a contiguous copy
    /// (torch's `x.to(device)`). Outside autograd, like a parameter move. A copy between the
    /// host and a device is counted (device/device.hpp: transfer_stats); one from a device
    /// to the host waits for the device, a host synchronisation. Defined in
    /// device/device_tensor.cpp, the layer that owns device memory.
    Tensor to(Device device) const;
    /// to(cpu).
    Tensor cpu() const;

    /// The value of a one-element tensor, as double.
    double item() const;
    /// Copies all elements out, in row-major order, converted to T.
    template <class T>
    std::vector<T> to_vector() const;
    /// Element at a multi-index, as double (slow; for tests and printing).
    double at(std::initializer_list<std::int64_t> index) const;

    /// True for tensors that take part in autograd (leaves marked, or results of ops on them).
    bool requires_grad() const { return impl().requires_grad || impl().grad_fn != nullptr; }
    /// Marks a leaf as a parameter (or input) whose gradient should be accumulated.
    Tensor& set_requires_grad(bool value = true);
    /// True when no op made this tensor (a user-created tensor or a parameter).
    bool is_leaf() const { return impl().grad_fn == nullptr; }
    /// The accumulated gradient; undefined until backward() reached this leaf.
    Tensor grad() const;
    /// Replaces the accumulated gradient (undefined to clear it).
    void set_grad(const Tensor& g);
    /// The node that computes this tensor's inputs' gradients, or null for leaves.
    const std::shared_ptr<Node>& grad_fn() const { return impl().grad_fn; }

    /// Runs backpropagation from this tensor. For a scalar the seed gradient is 1;
    /// otherwise pass @p gradient with this tensor's shape. Defined in
    /// autograd/engine.cpp: the tensor only names the entry point, the graph walk
    /// belongs to autograd, the layer above.
    void backward(const Tensor& gradient = Tensor()) const;

    /// A new handle to the same data, cut out of the graph (requires_grad false).
    Tensor detach() const;
    /// A deep copy, contiguous, outside the graph.
    Tensor clone() const;
    /// This tensor if contiguous, otherwise a contiguous copy (differentiable). Defined
    /// in ops/shape.cpp, next to reshape(), which records the copy for autograd.
    Tensor contiguous() const;

    /// Replaces this tensor's data (storage, layout, dtype) with @p value's, keeping its
    /// identity: every handle, requires_grad and grad hooks stay, and the gradient is
    /// cleared (like torch's `param.data = value`). Used to turn a model's parameters into
    /// low-precision working copies. Outside autograd; the shapes must match.
    void set_data(const Tensor& value);

    /// The implementation (for ops and autograd; users need not touch it).
    TensorImpl& impl() const;
    /// The shared implementation pointer.
    const std::shared_ptr<TensorImpl>& impl_ptr() const { return impl_; }
    /// Human-readable summary with the first elements.
    std::string str() const;

private:
    std::shared_ptr<TensorImpl> impl_;
};

/// An uninitialised contiguous tensor.
Tensor empty(const Shape& shape, DType dtype = DType::Float32);
/// An uninitialised contiguous tensor whose bytes come from @p allocator and live on
/// @p device (the allocator must give memory of that device).
Tensor empty_in(const Shape& shape, DType dtype, Allocator& allocator, Device device);
/// An uninitialised contiguous tensor on @p device (device/device_tensor.cpp).
Tensor empty(const Shape& shape, DType dtype, Device device);
/// A tensor of zeros on @p device (device/device_tensor.cpp).
Tensor zeros(const Shape& shape, DType dtype, Device device);
/// A tensor filled with @p value on @p device (device/device_tensor.cpp).
Tensor full(const Shape& shape, double value, DType dtype, Device device);
/// A tensor of ones on @p device (device/device_tensor.cpp).
Tensor ones(const Shape& shape, DType dtype, Device device);
/// A contiguous copy of a device tensor on the same device (clone() of a device tensor;
/// device/device_tensor.cpp).
Tensor device_clone(const Tensor& t);
/// to_dtype() of a device tensor, on its device (device/device_tensor.cpp).
Tensor device_to_dtype(const Tensor& t, DType dtype);
/// Throws PyTorch's kind of error when @p tensors (named by @p names, same order) do not
/// all live on one device: which op, which argument on which device, and what to do.
void check_same_device(const char* op, std::initializer_list<const Tensor*> tensors,
                       std::initializer_list<const char*> names);
/// A tensor filled with @p value.
Tensor full(const Shape& shape, double value, DType dtype = DType::Float32);
/// A tensor of zeros.
Tensor zeros(const Shape& shape, DType dtype = DType::Float32);
/// A tensor of ones.
Tensor ones(const Shape& shape, DType dtype = DType::Float32);
/// A scalar (shape {}) tensor.
Tensor scalar(double value, DType dtype = DType::Float32);
/// A tensor holding @p values (row-major) with shape @p shape; sizes must agree.
template <class T>
Tensor from_vector(const std::vector<T>& values, const Shape& shape);
/// Standard-normal samples scaled by @p stddev.
Tensor randn(const Shape& shape, Rng& rng, double stddev = 1.0, DType dtype = DType::Float32);
/// Uniform samples in [lo, hi).
Tensor rand_uniform(const Shape& shape, double lo, double hi, Rng& rng,
                    DType dtype = DType::Float32);
/// A copy of @p t converted to @p dtype (not differentiable).
Tensor to_dtype(const Tensor& t, DType dtype);
/// A view that shares @p base's storage with another shape, strides and offset.
Tensor make_view(const Tensor& base, Shape shape, Shape strides, std::int64_t offset);

/// Visits every element of @p t in row-major order, calling fn(linear_position, offset)
/// where offset is the element's position in storage (strides applied).
void for_each_offset(const Tensor& t, const std::function<void(std::int64_t, std::int64_t)>& fn);

}  // namespace gl

#include "tensor/tensor_inl.hpp"
