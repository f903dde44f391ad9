#include "tensor/dtype.hpp"

#include "base/error.hpp"

namespace gl {

bool is_differentiable(DType dtype) {
    return dtype == DType::Float32 || dtype == DType::Float64 || dtype == DType::Float16 ||
           dtype == DType::BFloat16;
}

std::string Device::str() const {
    switch (kind) {
        case DeviceKind::CPU: return "cpu";
        case DeviceKind::CudaCpu: return "cuda_cpu";
        case DeviceKind::CUDA: break;
    }
    return "cuda:" + std::to_string(index);
}

Device parse_device(const std::string& name) {
    if (name == "cpu") return kCpu;
    if (name == "cuda_cpu") return kCudaCpu;
    if (name == "cuda") return {DeviceKind::CUDA, 0};
    if (name.rfind("cuda:", 0) == 0 && name.size() > 5 && name.size() < 9 &&
        name.find_first_not_of("0123456789", 5) == std::string::npos)
        return {DeviceKind::CUDA, std::stoi(name.substr(5))};
    throw Error("unknown device '" + name + "'; use cpu, cuda (a GPU), cuda:N, or cuda_cpu (the same CUDA "
                "kernels on the CPU runtime, no GPU needed)");
}

}  // namespace gl
