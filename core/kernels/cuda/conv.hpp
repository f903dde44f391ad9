/// @file
/// @brief Host entry points of the CUDA convolution family (core/kernels/cuda/conv.cuh):
/// run a version on the CPU runtime or on a GPU.
///
/// Plain C++: include it from code compiled by any compiler. Operands of every pass, as in
/// kernels/cpu/conv/conv.hpp (float, NCHW, contiguous): forward (x, w) -> y, backward_data
/// (dy, w) -> dx, backward_weight (x, dy) -> dw; the output is overwritten.
#pragma once

#include <vector>

#include "kernels/cpu/conv/autotune.hpp"
#include "kernels/cpu/conv/conv.hpp"

namespace gl::kernels {

/// One version of the CUDA convolution family.
struct CudaConvVersion {
    int number;        ///< 1, 2
    const char* name;  ///< e.g. "conv_2_implicit_gemm"
    const char* idea;  ///< what it adds over the previous version, one line
};

/// The versions, in order.
const std::vector<CudaConvVersion>& cuda_conv_versions();

/// Pass @p pass of the convolution @p g with version @p version on the CPU runtime: any
/// host memory works there, gl::cuda::malloc memory too. Throws for a bad version or
/// geometry, naming it.
void cuda_conv(int version, conv::ConvPass pass, const conv::ConvGeometry& g, const float* a, const float* b,
               float* out);

/// The same on a GPU with operands in device memory (builds with nvcc only:
/// GRADLAB_HAVE_CUDA). Returns once the kernel is queued, like a CUDA launch.
void cuda_conv_device(int version, conv::ConvPass pass, const conv::ConvGeometry& g, const float* a,
                      const float* b, float* out);

/// For host code compiled without nvcc (tests): copies the host operands to the GPU, runs
/// the pass there and copies the output back. Throws gl::cuda::Error (code no_device)
/// without a GPU.
void cuda_conv_device_from_host(int version, conv::ConvPass pass, const conv::ConvGeometry& g, const float* a,
                                const float* b, float* out);

}  // namespace gl::kernels
