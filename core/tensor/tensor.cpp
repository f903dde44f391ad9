#include "tensor/tensor.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <optional>
#include <sstream>

#include "base/checked_arithmetic.hpp"
#include "base/rng.hpp"
#include "numerics/convert.hpp"

namespace gl {

std::int64_t numel_of(const Shape& shape) {
    // Shapes can come from a file header or an argument: a product that wraps around
    // would give a tensor of nonsense size instead of an error.
    const std::optional<std::int64_t> n = checked_product(shape);
    if (!n) throw Error("shape " + shape_str(shape) + " has more than 2^63 elements");
    return *n;
}

Shape contiguous_strides(const Shape& shape) {
    Shape strides(shape.size());
    std::int64_t step = 1;
    for (std::size_t d = shape.size(); d-- > 0;) {
        strides[d] = step;
        // Overflow here means a zero extent further out (a tensor that holds nothing, whose
        // strides are never used) or a shape that numel_of rejects.
        step = checked_mul(step, shape[d]).value_or(0);
    }
    return strides;
}

std::string shape_str(const Shape& shape) {
    std::string s = "[";
    for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
    return s + "]";
}

TensorImpl& Tensor::impl() const {
    // Not check(): its message argument would build a std::string on every call, and this
    // runs per element in some loops (an allocation per element).
    if (impl_ == nullptr) throw Error("use of an undefined tensor (was a gradient never computed?)");
    return *impl_;
}

std::int64_t Tensor::size(std::int64_t d) const {
    const std::int64_t n = dim();
    const std::int64_t axis = d < 0 ? d + n : d;
    // The message is built only on failure: size() runs in inner loops (per pixel in the
    // image transforms), where building it every call cost more than the loop's work.
    check(axis >= 0 && axis < n, [&] {
        return "Tensor::size: dimension " + std::to_string(d) + " is out of range for a tensor of shape " +
               shape_str(shape());
    });
    return shape()[static_cast<std::size_t>(axis)];
}

bool Tensor::is_contiguous() const {
    const Shape expected = contiguous_strides(shape());
    for (std::size_t d = 0; d < expected.size(); ++d)
        if (shape()[d] != 1 && strides()[d] != expected[d]) return false;
    return true;
}

void* Tensor::raw_data() const {
    if (!device().is_cpu())
        throw Error("this tensor lives on " + device().str() +
                    ", and CPU code cannot read device memory; copy it with .cpu() first, or run the "
                    "op on the device (device/device_ops.hpp)");
    return raw_data_ptr();
}

void* Tensor::raw_data_ptr() const {
    auto* base = static_cast<char*>(impl().storage->data());
    return base ? base + impl().offset * static_cast<std::int64_t>(size_of(dtype())) : nullptr;
}

namespace {

double load_as_double(const void* base, DType dtype, std::int64_t offset) {
    switch (dtype) {
        case DType::Float32: return static_cast<const float*>(base)[offset];
        case DType::Float64: return static_cast<const double*>(base)[offset];
        case DType::Int8: return static_cast<const std::int8_t*>(base)[offset];
        case DType::Int32: return static_cast<const std::int32_t*>(base)[offset];
        case DType::Float16: return half_bits_to_float(static_cast<const std::uint16_t*>(base)[offset]);
        case DType::BFloat16: return bfloat16_bits_to_float(static_cast<const std::uint16_t*>(base)[offset]);
    }
    return 0.0;
}

// double -> float rounding toward zero and then setting the lowest bit when inexact
// ("round to odd"). Rounding that float to half or bfloat16 (at least 2 bits shorter)
// then gives the correctly rounded result; plain double -> float -> half would round
// twice and could turn a value just above a tie into an exact tie.
float to_float_round_to_odd(double v) {
    float f = static_cast<float>(v);
    if (std::isnan(v) || static_cast<double>(f) == v) return f;
    if (std::fabs(static_cast<double>(f)) > std::fabs(v)) f = std::nextafter(f, 0.0f);
    return std::bit_cast<float>(std::bit_cast<std::uint32_t>(f) | 1u);
}

void store_from_double(void* base, DType dtype, std::int64_t offset, double v) {
    switch (dtype) {
        case DType::Float32: static_cast<float*>(base)[offset] = static_cast<float>(v); break;
        case DType::Float64: static_cast<double*>(base)[offset] = v; break;
        case DType::Int8: static_cast<std::int8_t*>(base)[offset] = static_cast<std::int8_t>(v); break;
        case DType::Int32: static_cast<std::int32_t*>(base)[offset] = static_cast<std::int32_t>(v); break;
        case DType::Float16:
            static_cast<std::uint16_t*>(base)[offset] = float_to_half_bits(to_float_round_to_odd(v));
            break;
        case DType::BFloat16:
            static_cast<std::uint16_t*>(base)[offset] = float_to_bfloat16_bits(to_float_round_to_odd(v));
            break;
    }
}

// out[i, j] = src[i * s0 + j * s1] for a [rows, cols] view, in 32 x 32 tiles so that a
// transposed view is read and written a cache line at a time, not a float at a time.
void copy_2d_float(const float* src, std::int64_t s0, std::int64_t s1, float* out, std::int64_t rows,
                   std::int64_t cols) {
    constexpr std::int64_t kTile = 32;
    for (std::int64_t i0 = 0; i0 < rows; i0 += kTile)
        for (std::int64_t j0 = 0; j0 < cols; j0 += kTile) {
            const std::int64_t i1 = std::min(rows, i0 + kTile), j1 = std::min(cols, j0 + kTile);
            for (std::int64_t i = i0; i < i1; ++i)
                for (std::int64_t j = j0; j < j1; ++j) out[i * cols + j] = src[i * s0 + j * s1];
        }
}

}  // namespace

void for_each_offset(const Tensor& t, const std::function<void(std::int64_t, std::int64_t)>& fn) {
    const Shape& shape = t.shape();
    const Shape& strides = t.strides();
    const std::int64_t n = t.numel();
    if (t.is_contiguous()) {
        for (std::int64_t i = 0; i < n; ++i) fn(i, i);
        return;
    }
    // An odometer over the multi-index: bump the last digit, carry into earlier ones.
    Shape index(shape.size(), 0);
    std::int64_t offset = 0;
    for (std::int64_t i = 0; i < n; ++i) {
        fn(i, offset);
        for (std::size_t d = shape.size(); d-- > 0;) {
            if (++index[d] < shape[d]) {
                offset += strides[d];
                break;
            }
            offset -= strides[d] * (shape[d] - 1);
            index[d] = 0;
        }
    }
}

double Tensor::item() const {
    check(numel() == 1, [&] {
        return "item(): the tensor has " + std::to_string(numel()) +
               " elements; item() needs exactly one (reduce it first, e.g. with sum)";
    });
    if (!device().is_cpu()) return cpu().item();  // a copy to the host: the device syncs
    return load_as_double(raw_data(), dtype(), 0);
}

double Tensor::at(std::initializer_list<std::int64_t> index) const {
    check(static_cast<std::int64_t>(index.size()) == dim(), [&] {
        return "at(): " + std::to_string(index.size()) + " indices for a " + std::to_string(dim()) + "-d tensor";
    });
    if (!device().is_cpu()) return cpu().at(index);
    std::int64_t offset = 0;
    std::size_t d = 0;
    for (auto i : index) {
        check(i >= 0 && i < shape()[d],
              [&] { return "at(): index " + std::to_string(i) + " out of range in dimension " + std::to_string(d); });
        offset += i * strides()[d++];
    }
    return load_as_double(raw_data(), dtype(), offset);
}

Tensor& Tensor::set_requires_grad(bool value) {
    check(is_leaf(), "set_requires_grad: only leaf tensors (not results of ops) can be marked; "
                     "use detach() to make a new leaf");
    check(!value || is_differentiable(dtype()),
          "set_requires_grad: " + name_of(dtype()) + " tensors cannot carry gradients");
    impl().requires_grad = value;
    return *this;
}

Tensor Tensor::grad() const { return impl().grad ? Tensor(impl().grad) : Tensor(); }

void Tensor::set_grad(const Tensor& g) { impl().grad = g.defined() ? g.impl_ptr() : nullptr; }

void Tensor::set_data(const Tensor& value) {
    check(value.shape() == shape(), "set_data: the new data has shape " + shape_str(value.shape()) +
                                        ", the tensor " + shape_str(shape()));
    check(is_leaf(), "set_data: only leaf tensors (parameters) can have their data replaced");
    TensorImpl& self = impl();
    self.storage = value.impl().storage;
    self.offset = value.impl().offset;
    self.strides = value.impl().strides;
    self.dtype = value.impl().dtype;
    self.grad = nullptr;
}

Tensor Tensor::detach() const {
    auto out = std::make_shared<TensorImpl>();
    out->storage = impl().storage;
    out->offset = impl().offset;
    out->shape = impl().shape;
    out->strides = impl().strides;
    out->dtype = impl().dtype;
    return Tensor(out);
}

Tensor Tensor::clone() const {
    if (!device().is_cpu()) return device_clone(*this);
    Tensor out = empty(shape(), dtype());
    const std::size_t elem = size_of(dtype());
    if (is_contiguous()) {
        std::memcpy(out.raw_data(), raw_data(), static_cast<std::size_t>(numel()) * elem);
        return out;
    }
    const auto* src = static_cast<const char*>(raw_data());
    auto* dst = static_cast<char*>(out.raw_data());
    if (dim() == 2 && dtype() == DType::Float32) {  // e.g. a transposed gradient: tile by tile
        copy_2d_float(static_cast<const float*>(raw_data()), strides()[0], strides()[1],
                      static_cast<float*>(out.raw_data()), shape()[0], shape()[1]);
        return out;
    }
    for_each_offset(*this, [&](std::int64_t i, std::int64_t off) {
        std::memcpy(dst + i * static_cast<std::int64_t>(elem), src + off * static_cast<std::int64_t>(elem), elem);
    });
    return out;
}

std::string Tensor::str() const {
    if (!defined()) return "Tensor(undefined)";
    std::ostringstream os;
    os << "Tensor(shape=" << shape_str(shape()) << ", dtype=" << name_of(dtype());
    if (!device().is_cpu()) os << ", device=" << device().str();
    os << ", [";
    const std::int64_t shown = std::min<std::int64_t>(numel(), 8);
    const Tensor c = cpu().clone();
    for (std::int64_t i = 0; i < shown; ++i) os << (i ? ", " : "") << load_as_double(c.raw_data(), dtype(), i);
    os << (numel() > shown ? ", ...])" : "])");
    return os.str();
}

Tensor empty(const Shape& shape, DType dtype) { return empty_in(shape, dtype, default_cpu_allocator(), kCpu); }

Tensor empty_in(const Shape& shape, DType dtype, Allocator& allocator, Device device) {
    // Lazy messages: every tensor is made here, most of them small.
    for (auto extent : shape)
        check(extent >= 0, [&] { return "empty: negative extent in shape " + shape_str(shape); });
    auto impl = std::make_shared<TensorImpl>();
    const std::optional<std::size_t> nbytes = checked_mul(static_cast<std::size_t>(numel_of(shape)), size_of(dtype));
    check(nbytes.has_value(),
          [&] { return "empty: shape " + shape_str(shape) + " of " + name_of(dtype) + " needs more than 2^64 bytes"; });
    impl->storage = std::make_shared<Storage>(*nbytes, allocator, device);
    impl->shape = shape;
    impl->strides = contiguous_strides(shape);
    impl->dtype = dtype;
    return Tensor(impl);
}

Tensor full(const Shape& shape, double value, DType dtype) {
    Tensor t = empty(shape, dtype);
    for (std::int64_t i = 0; i < t.numel(); ++i) store_from_double(t.raw_data(), dtype, i, value);
    return t;
}

Tensor zeros(const Shape& shape, DType dtype) {
    Tensor t = empty(shape, dtype);
    if (t.numel() > 0) std::memset(t.raw_data(), 0, static_cast<std::size_t>(t.numel()) * size_of(dtype));
    return t;
}

Tensor ones(const Shape& shape, DType dtype) { return full(shape, 1.0, dtype); }

Tensor scalar(double value, DType dtype) { return full({}, value, dtype); }

Tensor randn(const Shape& shape, Rng& rng, double stddev, DType dtype) {
    Tensor t = empty(shape, dtype);
    for (std::int64_t i = 0; i < t.numel(); ++i)
        store_from_double(t.raw_data(), dtype, i, stddev * rng.normal());
    return t;
}

Tensor rand_uniform(const Shape& shape, double lo, double hi, Rng& rng, DType dtype) {
    Tensor t = empty(shape, dtype);
    for (std::int64_t i = 0; i < t.numel(); ++i)
        store_from_double(t.raw_data(), dtype, i, rng.uniform(lo, hi));
    return t;
}

Tensor to_dtype(const Tensor& t, DType dtype) {
    if (!t.device().is_cpu()) return device_to_dtype(t, dtype);
    Tensor out = empty(t.shape(), dtype);
    // float32 <-> float16/bfloat16 on contiguous data: the bulk conversions (F16C where
    // the CPU has it), bit-identical to the element-by-element code below.
    const auto n = static_cast<std::size_t>(t.numel());
    if (t.is_contiguous() && t.dtype() == DType::Float32 && numerics::is_16bit_float(dtype)) {
        numerics::from_float(dtype, t.data<float>(), out.raw_data(), n);
        return out;
    }
    if (t.is_contiguous() && numerics::is_16bit_float(t.dtype()) && dtype == DType::Float32) {
        numerics::to_float(t.dtype(), t.raw_data(), out.data<float>(), n);
        return out;
    }
    const void* src = t.raw_data();
    void* dst = out.raw_data();
    for_each_offset(t, [&](std::int64_t i, std::int64_t off) {
        store_from_double(dst, dtype, i, load_as_double(src, t.dtype(), off));
    });
    return out;
}

void check_same_device(const char* op, std::initializer_list<const Tensor*> tensors,
                       std::initializer_list<const char*> names) {
    const Tensor* first = *tensors.begin();
    const char* first_name = *names.begin();
    auto name = names.begin();
    for (const Tensor* t : tensors) {
        if (t->defined() && first->defined() && t->device() != first->device())
            throw Error(std::string(op) + ": expected all tensors to be on the same device, but found two: " +
                        first_name + " is on " + first->device().str() + " and " + *name + " is on " +
                        t->device().str() + ". Move them to one device first: model.to(device) for the "
                        "parameters, x.to(device) for each input (the batch), once, before the step");
        ++name;
    }
}

Tensor make_view(const Tensor& base, Shape shape, Shape strides, std::int64_t offset) {
    auto impl = std::make_shared<TensorImpl>();
    impl->storage = base.storage();
    impl->offset = offset;
    impl->shape = std::move(shape);
    impl->strides = std::move(strides);
    impl->dtype = base.dtype();
    return Tensor(impl);
}

}  // namespace gl
