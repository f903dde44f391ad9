// The device kernels of a training step (tensor_ops.cuh) compiled by g++ for the CPU
// runtime: the same source nvcc compiles in tensor_ops_gpu.cu.
#include "kernels/cuda/tensor_ops.cuh"

namespace gl::kernels {

const DeviceKernels& cpu_runtime_kernels() {
    static const DeviceKernels kernels = cuda::make_device_kernels("CPU runtime");
    return kernels;
}

}  // namespace gl::kernels
