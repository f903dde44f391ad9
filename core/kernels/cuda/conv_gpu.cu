// The CUDA convolution family compiled by nvcc for the GPU: the same .cuh files g++
// compiles in conv_cpu.cpp. Compiled in every build that finds nvcc, run only where a GPU is.
#include <cstddef>

#include "kernels/cuda/conv.cuh"
#include "kernels/cuda/conv.hpp"

namespace gl::kernels {

void cuda_conv_device(int version, conv::ConvPass pass, const conv::ConvGeometry& g, const float* a,
                      const float* b, float* out) {
    cuda::launch_conv(version, pass, g, a, b, out);
}

namespace {
/// n floats of device memory, copied from @p host when given, freed on destruction.
struct DeviceFloats {
    DeviceFloats(std::size_t count, const float* host) : n(count), ptr(gl::cuda::malloc_n<float>(count)) {
        if (host) gl::cuda::memcpy(ptr, host, n * sizeof(float), gl::cuda::CopyKind::host_to_device);
    }
    ~DeviceFloats() { cudaFree(ptr); }
    DeviceFloats(const DeviceFloats&) = delete;
    DeviceFloats& operator=(const DeviceFloats&) = delete;
    std::size_t n;
    float* ptr;
};

/// Element counts of the (a, b, out) operands of @p pass.
struct PassSizes {
    std::size_t a, b, out;
};
PassSizes pass_sizes(conv::ConvPass pass, const conv::ConvGeometry& g) {
    const std::size_t x = g.input_size(), w = g.weight_size(), y = g.output_size();
    switch (pass) {
        case conv::ConvPass::Forward: return {x, w, y};
        case conv::ConvPass::BackwardData: return {y, w, x};
        case conv::ConvPass::BackwardWeight: return {x, y, w};
    }
    return {0, 0, 0};
}
}  // namespace

void cuda_conv_device_from_host(int version, conv::ConvPass pass, const conv::ConvGeometry& g, const float* a,
                                const float* b, float* out) {
    const PassSizes sizes = pass_sizes(pass, g);
    DeviceFloats da(sizes.a, a), db(sizes.b, b), dout(sizes.out, nullptr);
    cuda_conv_device(version, pass, g, da.ptr, db.ptr, dout.ptr);
    gl::cuda::synchronize();
    gl::cuda::memcpy(out, dout.ptr, sizes.out * sizeof(float), gl::cuda::CopyKind::device_to_host);
}

}  // namespace gl::kernels
