// The CUDA convolution family compiled by g++ for the CPU runtime: the same .cuh files
// nvcc compiles in conv_gpu.cu. The list of versions lives here, in the file every build has.
#include "kernels/cuda/conv.cuh"
#include "kernels/cuda/conv.hpp"

namespace gl::kernels {

const std::vector<CudaConvVersion>& cuda_conv_versions() {
    static const std::vector<CudaConvVersion> versions = {
        {1, "conv_1_direct", "one thread per element written, the definition's loops over global memory"},
        {2, "conv_2_implicit_gemm", "each pass a GEMM whose shared-memory tiles are gathered from the image"},
    };
    return versions;
}

void cuda_conv(int version, conv::ConvPass pass, const conv::ConvGeometry& g, const float* a, const float* b,
               float* out) {
    cuda::launch_conv(version, pass, g, a, b, out);
}

}  // namespace gl::kernels
