/// @file
/// @brief Template definitions for tensor.hpp.
#pragma once

namespace gl {

template <class T>
T* Tensor::data() const {
    // The message is built only on failure: this runs in every kernel call.
    check(dtype() == dtype_of<T>(),
          [&] { return "Tensor::data<T>(): the tensor holds " + name_of(dtype()) + ", not " + name_of(dtype_of<T>()); });
    return static_cast<T*>(raw_data());
}

template <class T>
T* Tensor::data_ptr() const {
    // The message is built only on failure: this runs in every kernel call.
    check(dtype() == dtype_of<T>(),
          [&] { return "Tensor::data_ptr<T>(): the tensor holds " + name_of(dtype()) + ", not " + name_of(dtype_of<T>()); });
    return static_cast<T*>(raw_data_ptr());
}

template <class T>
std::vector<T> Tensor::to_vector() const {
    std::vector<T> out(static_cast<std::size_t>(numel()));
    const Tensor c = to_dtype(cpu(), dtype_of<T>());
    const T* src = c.data<T>();
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = src[i];
    return out;
}

template <class T>
Tensor from_vector(const std::vector<T>& values, const Shape& shape) {
    check(static_cast<std::int64_t>(values.size()) == numel_of(shape),
          "from_vector: " + std::to_string(values.size()) + " values do not fill shape " +
              shape_str(shape));
    Tensor t = empty(shape, dtype_of<T>());
    T* dst = t.data<T>();
    for (std::size_t i = 0; i < values.size(); ++i) dst[i] = values[i];
    return t;
}

}  // namespace gl
