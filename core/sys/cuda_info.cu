// Device query: the first CUDA source of the project. Compiled by nvcc whenever it is
// installed; on a machine without a GPU it reports the driver's own message.
#include <cuda_runtime.h>

#include "sys/cuda_info.hpp"

namespace gl::sys {
namespace {

__global__ void write_answer(int* out) { *out = 42; }

bool run_smoke_kernel() {
    int* d = nullptr;
    if (cudaMalloc(&d, sizeof(int)) != cudaSuccess) return false;
    write_answer<<<1, 1>>>(d);
    int h = 0;
    const bool ok = cudaMemcpy(&h, d, sizeof(int), cudaMemcpyDeviceToHost) == cudaSuccess && h == 42;
    cudaFree(d);
    return ok;
}

}  // namespace

CudaReport cuda_report() {
    CudaReport r;
    r.built_with_cuda = true;
    cudaRuntimeGetVersion(&r.runtime_version);
    cudaDriverGetVersion(&r.driver_version);
    int count = 0;
    const cudaError_t err = cudaGetDeviceCount(&count);
    if (err != cudaSuccess) {
        r.reason = std::string(cudaGetErrorName(err)) + ": " + cudaGetErrorString(err);
        return r;
    }
    if (count == 0) r.reason = "the CUDA driver reports no devices";
    for (int i = 0; i < count; ++i) {
        cudaDeviceProp p{};
        if (cudaGetDeviceProperties(&p, i) != cudaSuccess) continue;
        CudaDevice d;
        d.index = i;
        d.name = p.name;
        d.major = p.major;
        d.minor = p.minor;
        d.memory_bytes = static_cast<long long>(p.totalGlobalMem);
        d.multiprocessors = p.multiProcessorCount;
        cudaSetDevice(i);
        d.smoke_kernel_ran = run_smoke_kernel();
        r.devices.push_back(d);
    }
    return r;
}

}  // namespace gl::sys
