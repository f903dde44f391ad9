// The device kernels of a training step (tensor_ops.cuh) compiled by nvcc for a GPU: the
// same source g++ compiles in tensor_ops_cpu.cpp. Compiled in every build that finds nvcc,
// run only where a GPU is.
#include "kernels/cuda/tensor_ops.cuh"

namespace gl::kernels {

const DeviceKernels& gpu_kernels() {
    static const DeviceKernels kernels = cuda::make_device_kernels("GPU");
    return kernels;
}

}  // namespace gl::kernels
