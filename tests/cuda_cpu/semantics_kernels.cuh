// Kernels that exercise the parts of CUDA the CPU runtime emulates (shuffles at every
// width, votes on a partial warp, contended atomics, dynamic shared memory), with a host
// function that runs them all. Included by the test (g++, CPU runtime) and by
// semantics_gpu.cu (nvcc): on a machine with a GPU the two results must be equal, which
// checks the emulation against the hardware. Everything is in an anonymous namespace, so
// the two compilations do not clash.
#pragma once

#include <vector>

#include "cuda_cpu/cuda_compat.hpp"
#include "semantics.hpp"

namespace {

__global__ void semantics_shuffles(int width, int arg, int* out) {
    const int lane = threadIdx.x;
    const int v = 100 + lane;
    out[0 * 32 + lane] = __shfl_sync(0xffffffffu, v, arg, width);
    out[1 * 32 + lane] = __shfl_up_sync(0xffffffffu, v, static_cast<unsigned>(arg), width);
    out[2 * 32 + lane] = __shfl_down_sync(0xffffffffu, v, static_cast<unsigned>(arg), width);
    out[3 * 32 + lane] = __shfl_xor_sync(0xffffffffu, v, arg, width);
}

__global__ void semantics_segment_sums(int width, const double* in, double* out) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    double a = in[i], b = in[i];
    for (int offset = width / 2; offset > 0; offset /= 2) {
        a += __shfl_down_sync(0xffffffffu, a, static_cast<unsigned>(offset), width);
        b += __shfl_xor_sync(0xffffffffu, b, offset, width);
    }
    out[2 * i] = a;
    out[2 * i + 1] = b;
}

__global__ void semantics_votes(unsigned* out) {
    const int t = threadIdx.x;
    const int lane = t % 32;
    out[4 * t + 0] = __ballot_sync(0xffffffffu, lane % 3 == 0);
    out[4 * t + 1] = static_cast<unsigned>(__any_sync(0xffffffffu, lane == 20));
    out[4 * t + 2] = static_cast<unsigned>(__all_sync(0xffffffffu, lane != 13));
    out[4 * t + 3] = 0;
    if (lane < 16) out[4 * t + 3] = __ballot_sync(0x0000ffffu, lane & 1);
    __syncwarp();
}

__device__ float semantics_atomic_max_float(float* address, float value) {
    int* bits = reinterpret_cast<int*>(address);
    int old = atomicCAS(bits, 0, 0);
    while (__int_as_float(old) < value) {
        const int assumed = old;
        old = atomicCAS(bits, assumed, __float_as_int(value));
        if (old == assumed) break;
    }
    return __int_as_float(old);
}

__global__ void semantics_atomics(int* i32, float* f32, unsigned long long* u64) {
    const int gid = blockIdx.x * blockDim.x + threadIdx.x;
    atomicAdd(&i32[0], 1);
    atomicMax(&i32[1], gid);
    atomicMin(&i32[2], -gid);
    atomicAdd(&f32[0], 1.0f);
    semantics_atomic_max_float(&f32[1], 0.5f * static_cast<float>(gid));
    const int old = atomicExch(&i32[3], gid);
    atomicAdd(&u64[0], static_cast<unsigned long long>(old));
    atomicAdd(&u64[1], static_cast<unsigned long long>(gid));
}

__global__ void semantics_reverse_dynamic(const float* in, float* out) {
    float* s = gl::cuda::dynamic_shared<float>();
    const int t = threadIdx.x;
    s[t] = in[blockIdx.x * blockDim.x + t];
    __syncthreads();
    out[blockIdx.x * blockDim.x + t] = s[blockDim.x - 1 - t];
}

template <class T>
std::vector<T> run_and_copy(std::size_t n, const std::vector<T>& init, auto&& launch_with) {
    T* d = gl::cuda::malloc_n<T>(n);
    gl::cuda::memcpy(d, init.data(), n * sizeof(T), gl::cuda::CopyKind::host_to_device);
    launch_with(d);
    gl::cuda::synchronize();
    std::vector<T> h(n);
    gl::cuda::memcpy(h.data(), d, n * sizeof(T), gl::cuda::CopyKind::device_to_host);
    gl::cuda::free(d);
    return h;
}

gl::test::SemanticsResults run_semantics() {
    using gl::cuda::launch;
    gl::test::SemanticsResults r;
    for (int width : {1, 2, 4, 8, 16, 32})
        for (int arg : {0, 1, 3, width / 2, width - 1, width, width + 1, 31}) {
            const auto out = run_and_copy<int>(128, std::vector<int>(128, 0), [&](int* d) {
                launch(semantics_shuffles, dim3(1), dim3(32), 0, width, arg, d);
            });
            r.shuffles.insert(r.shuffles.end(), out.begin(), out.end());
        }

    const int n = 4 * 64;
    std::vector<double> in(n);
    for (int i = 0; i < n; ++i) in[i] = 0.25 * i - 3;
    double* d_in = gl::cuda::malloc_n<double>(n);
    gl::cuda::memcpy(d_in, in.data(), n * sizeof(double), gl::cuda::CopyKind::host_to_device);
    for (int width : {1, 2, 4, 8, 16, 32}) {
        const auto out = run_and_copy<double>(2 * n, std::vector<double>(2 * n, 0.0), [&](double* d) {
            launch(semantics_segment_sums, dim3(4), dim3(64), 0, width, d_in, d);
        });
        r.segment_sums.insert(r.segment_sums.end(), out.begin(), out.end());
    }
    gl::cuda::free(d_in);

    r.votes = run_and_copy<unsigned>(4 * 48, std::vector<unsigned>(4 * 48, 7u), [&](unsigned* d) {
        launch(semantics_votes, dim3(1), dim3(48), 0, d);  // the second warp has 16 lanes
    });

    const auto i32 = run_and_copy<int>(4, {0, -1, 1, 0}, [&](int* di) {
        const auto f32 = run_and_copy<float>(2, {0.0f, -1.0f}, [&](float* df) {
            const auto u64 = run_and_copy<unsigned long long>(2, {0, 0}, [&](unsigned long long* du) {
                launch(semantics_atomics, dim3(64), dim3(256), 0, di, df, du);
            });
            r.atomics.push_back(static_cast<long long>(u64[0]));
            r.atomics.push_back(static_cast<long long>(u64[1]));
        });
        r.atomics.push_back(static_cast<long long>(f32[0]));
        r.atomics.push_back(static_cast<long long>(2 * f32[1]));
    });
    r.atomics.push_back(i32[0]);
    r.atomics.push_back(i32[1]);
    r.atomics.push_back(i32[2]);
    r.atomics.push_back(i32[3] + r.atomics[0]);  // exchanged values plus the last one: sum of gids

    std::vector<float> values(3 * 100);
    for (std::size_t i = 0; i < values.size(); ++i) values[i] = 0.5f * static_cast<float>(i);
    float* d_values = gl::cuda::malloc_n<float>(values.size());
    gl::cuda::memcpy(d_values, values.data(), values.size() * sizeof(float), gl::cuda::CopyKind::host_to_device);
    r.reversed = run_and_copy<float>(values.size(), std::vector<float>(values.size(), 0.0f), [&](float* d) {
        launch(semantics_reverse_dynamic, dim3(3), dim3(100), 100 * sizeof(float), d_values, d);
    });
    gl::cuda::free(d_values);
    return r;
}

}  // namespace
