// The compute stage of the chunked copy-then-compute pipeline (chunked_pipeline.hpp): an
// element-wise kernel with an adjustable amount of arithmetic per element, so that the
// kernel's time can be made longer than a chunk's copy (the case streams help with).
#pragma once

#include "cuda_cpu/cuda_compat.hpp"

namespace gl::kernels::cuda {
namespace {  // compiled for each runtime that includes it

/// out[i] = the affine map v -> 0.999 v + 0.5 applied @p work times to in[i], for i < n.
/// Element-wise, so a chunk gives the same bits as the whole array.
__global__ void chunk_compute(int n, int work, const float* in, float* out) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float v = in[i];
    for (int k = 0; k < work; ++k) v = v * 0.999f + 0.5f;
    out[i] = v;
}

}  // namespace
}  // namespace gl::kernels::cuda
