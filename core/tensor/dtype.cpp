#include "tensor/dtype.hpp"

namespace gl {

bool is_differentiable(DType dtype) {
    return dtype == DType::Float32 || dtype == DType::Float64 || dtype == DType::Float16 ||
           dtype == DType::BFloat16;
}

std::string Device::str() const {
    return kind == DeviceKind::CPU ? std::string("cpu") : "cuda:" + std::to_string(index);
}

}  // namespace gl
