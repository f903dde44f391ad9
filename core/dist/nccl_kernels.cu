// The one kernel the NCCL backend needs for the hand-written all-reduce algorithms:
// dst += src, element-wise, on the rank's stream.
#include <cuda_runtime.h>

#include <cstddef>

namespace gl::dist {

template <class T>
__global__ void add_into(T* dst, const T* src, std::size_t n) {
    const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
    for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n; i += stride)
        dst[i] += src[i];
}

cudaError_t launch_add_into(void* dst, const void* src, std::size_t n, bool is_double, cudaStream_t stream) {
    if (n == 0) return cudaSuccess;
    const unsigned threads = 256;
    const unsigned blocks = static_cast<unsigned>(n / threads + 1 < 4096 ? n / threads + 1 : 4096);
    if (is_double) add_into<<<blocks, threads, 0, stream>>>(static_cast<double*>(dst), static_cast<const double*>(src), n);
    else add_into<<<blocks, threads, 0, stream>>>(static_cast<float*>(dst), static_cast<const float*>(src), n);
    return cudaGetLastError();
}

}  // namespace gl::dist
