// Tensors on a device: factories, moves between host and device, copies and casts there.
// Declared with the tensor (tensor/tensor.hpp), defined here, in the layer that owns
// device memory, as Tensor::backward is defined in autograd.
#include <cstring>
#include <string>

#include "device/device.hpp"
#include "device/device_ops.hpp"
#include "tensor/tensor.hpp"

namespace gl {

Tensor empty(const Shape& shape, DType dtype, Device device) {
    if (device.is_cpu()) return empty(shape, dtype);
    return empty_in(shape, dtype, device::device_allocator(device), device);
}

Tensor zeros(const Shape& shape, DType dtype, Device device) {
    if (device.is_cpu()) return zeros(shape, dtype);
    Tensor t = empty(shape, dtype, device);
    if (t.numel() > 0)
        device::kernels_for(device).memset(t.raw_data_ptr(), 0, static_cast<std::size_t>(t.numel()) * size_of(dtype));
    return t;
}

Tensor full(const Shape& shape, double value, DType dtype, Device device) {
    if (device.is_cpu()) return full(shape, value, dtype);
    if (dtype != DType::Float32) return full(shape, value, dtype).to(device);  // one small upload
    Tensor t = empty(shape, dtype, device);
    device::kernels_for(device).fill(t.numel(), static_cast<float>(value), t.data_ptr<float>());
    return t;
}

Tensor ones(const Shape& shape, DType dtype, Device device) { return full(shape, 1.0, dtype, device); }

Tensor Tensor::to(Device target) const {
    if (device() == target) return *this;
    if (!device().is_cpu() && !target.is_cpu() && device() != target) return cpu().to(target);
    const Tensor src = is_contiguous() ? *this : clone();  // copies move dense bytes
    Tensor out = empty(shape(), dtype(), target);
    device::copy(target, out.raw_data_ptr(), device(), src.raw_data_ptr(),
                 static_cast<std::size_t>(numel()) * size_of(dtype()));
    return out;
}

Tensor Tensor::cpu() const { return to(kCpu); }

Tensor device_clone(const Tensor& t) {
    const Device device = t.device();
    Tensor out = empty(t.shape(), t.dtype(), device);
    const auto bytes = static_cast<std::size_t>(t.numel()) * size_of(t.dtype());
    if (t.is_contiguous()) {
        device::copy(device, out.raw_data_ptr(), device, t.raw_data_ptr(), bytes);
        return out;
    }
    device::kernels_for(device).gather(t.numel(), static_cast<int>(size_of(t.dtype())),
                                       device::strided_index(t.shape(), t.strides()), t.raw_data_ptr(),
                                       out.raw_data_ptr());
    return out;
}

Tensor device_to_dtype(const Tensor& t, DType dtype) {
    if (t.dtype() == dtype) return t.clone();
    const Device device = t.device();
    const kernels::DeviceKernels& k = device::kernels_for(device);
    const Tensor c = t.is_contiguous() ? t : t.clone();
    Tensor out = empty(t.shape(), dtype, device);
    const std::int64_t n = t.numel();
    const auto* bits_in = static_cast<const std::uint16_t*>(c.raw_data_ptr());
    auto* bits_out = static_cast<std::uint16_t*>(out.raw_data_ptr());
    if (t.dtype() == DType::Float32 && dtype == DType::Float16) k.float_to_half(n, c.data_ptr<float>(), bits_out);
    else if (t.dtype() == DType::Float32 && dtype == DType::BFloat16) k.float_to_bf16(n, c.data_ptr<float>(), bits_out);
    else if (t.dtype() == DType::Float16 && dtype == DType::Float32) k.half_to_float(n, bits_in, out.data_ptr<float>());
    else if (t.dtype() == DType::BFloat16 && dtype == DType::Float32) k.bf16_to_float(n, bits_in, out.data_ptr<float>());
    else
        throw Error("to_dtype on " + device.str() + ": only float32 <-> float16/bfloat16 run on a device (got " +
                    name_of(t.dtype()) + " -> " + name_of(dtype) + "); convert on the CPU: x.cpu()");
    return out;
}

}  // namespace gl
