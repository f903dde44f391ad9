#include "autograd/accumulate.hpp"

#include "device/device_ops.hpp"
#include "kernels/cpu/elementwise.hpp"

namespace gl {

void add_(const Tensor& self, const Tensor& other, double alpha) {
    check(self.shape() == other.shape(), "add_: shapes " + shape_str(self.shape()) + " and " +
                                             shape_str(other.shape()) + " differ");
    check(self.is_contiguous(), "add_: the destination must be contiguous");
    check(self.dtype() == other.dtype(), "add_: operands have different dtypes (" + name_of(self.dtype()) +
                                             " and " + name_of(other.dtype()) + "); convert one with to_dtype");
    check_same_device("add_", {&self, &other}, {"self", "other"});
    if (device::on_device(self)) {
        device::axpy_(self, other, alpha);
        return;
    }
    const Tensor src = other.is_contiguous() ? other : other.clone();
    if (self.dtype() == DType::Float32) {
        kernels::axpy(static_cast<float>(alpha), src.data<float>(), self.data<float>(), self.numel());
        return;
    }
    dispatch_floating(self.dtype(), "add_", [&]<class T>() {
        T* dst = self.data<T>();
        const T* s = src.data<T>();
        const T a = static_cast<T>(alpha);
        for (std::int64_t i = 0; i < self.numel(); ++i) dst[i] += a * s[i];
    });
}

Tensor add_gradients(const Tensor& a, const Tensor& b) {
    Tensor sum = a.clone();  // a contiguous copy: a may be another node's input, unchanged
    add_(sum, b);
    return sum;
}

}  // namespace gl
