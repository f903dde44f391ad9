/// @file
/// @brief The CUDA convolution family: the convolution of kernels/cpu/conv/conv.hpp (NCHW,
/// float, stride, padding, dilation, groups), its data gradient and its weight gradient,
/// as CUDA kernels written once for both runtimes. Two versions, one idea apart:
///
///   version 1 (conv_1_direct.cuh): one thread per element it writes, running the loops
///             of the definition over its receptive field (forward), over the outputs that
///             read it (data gradient) or over the outputs that used it (weight gradient).
///             Every operand is read straight from global memory, once per use.
///   version 2 (conv_2_implicit_gemm.cuh): each pass seen as one GEMM per group, as the CPU
///             im2col version does, but the column matrix is never written: the GEMM's
///             shared-memory tiles are gathered straight from the image (or the output
///             gradient), so every value fetched from global memory serves a whole tile of
///             multiply-adds and no im2col buffer is allocated (cuDNN's
///             IMPLICIT_GEMM algorithm).
///
/// Both are checked against the CPU direct convolution on odd shapes on the CPU runtime
/// (tests/cuda_cpu/test_cuda_conv.cpp) and, where there is a GPU, on the device.
///
/// Compiled by g++ for the CPU runtime (conv_cpu.cpp) and by nvcc for a GPU (conv_gpu.cu);
/// launch_conv below is the host side, shared by both.
#pragma once

#include <string>

#include "base/error.hpp"
#include "cuda_cpu/cuda_compat.hpp"
#include "kernels/cpu/conv/conv.hpp"
#include "kernels/cuda/conv_dims.cuh"
#include "kernels/cuda/conv_1_direct.cuh"
#include "kernels/cuda/conv_2_implicit_gemm.cuh"

namespace gl::kernels::cuda {
namespace {  // internal: g++ (CPU runtime) and nvcc (GPU) each compile their own copy

/// Launches version @p version of pass @p pass on the runtime this file is compiled for.
/// The operands are device memory of that runtime: (x, w) -> y for the forward pass,
/// (dy, w) -> dx for the data gradient, (x, dy) -> dw for the weight gradient; the output
/// is overwritten.
inline void launch_conv(int version, conv::ConvPass pass, const conv::ConvGeometry& g, const float* a,
                        const float* b, float* out) {
    const ConvDims d = conv_dims(g);
    switch (version) {
        case 1: launch_conv_direct(pass, d, a, b, out); return;
        case 2: launch_conv_implicit_gemm(pass, d, a, b, out); return;
        default:
            throw gl::Error("cuda_conv: there is no version " + std::to_string(version) +
                            "; the versions are 1 (direct) and 2 (implicit GEMM), core/kernels/cuda/conv.cuh");
    }
}

}  // namespace
}  // namespace gl::kernels::cuda
