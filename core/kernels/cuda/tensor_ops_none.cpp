// Builds without nvcc: there are no GPU kernels, and asking for them says why.
#include "cuda_cpu/error.hpp"
#include "kernels/cuda/tensor_ops.hpp"

namespace gl::kernels {

const DeviceKernels& gpu_kernels() {
    throw gl::cuda::Error(gl::cuda::ErrorCode::no_device,
                          "this build has no CUDA (nvcc was not found when meson configured it; install the "
                          "CUDA toolkit at /usr/local/cuda and configure a new build)");
}

}  // namespace gl::kernels
