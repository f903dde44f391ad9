/// @file
/// @brief The CUDA kernels of a training step on a device, written once for both runtimes
/// (entries and index structs: tensor_ops.hpp).
///
/// Each kernel is the plain version a student writes first: one thread per output element
/// (or per row, for the row-wise loss kernels), grid-stride loops so any size fits one
/// launch; the one exception is the sum, one block per output element with a shared-memory
/// tree, because a sum over a batch has too little parallelism per thread otherwise. They
/// are bandwidth-bound, like their CPU twins in kernels/cpu/elementwise.hpp, and give the
/// same results to float rounding (tests/cuda_cpu/test_device_tensor.cpp checks each one,
/// forward and backward, against the CPU op on odd shapes).
///
/// Compiled by g++ in tensor_ops_cpu.cpp (the CPU runtime) and by nvcc in tensor_ops_gpu.cu;
/// everything here is in an anonymous namespace, so the two compilations never share a
/// symbol, and make_device_kernels() fills the table with this compilation's launches.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <utility>

#include "cuda_cpu/cuda_compat.hpp"
#include "cuda_cpu/cuda_fp16_compat.hpp"
#include "cuda_cpu/streams.hpp"
#include "kernels/cuda/conv.cuh"
#include "kernels/cuda/sgemm.cuh"
#include "kernels/cuda/sgemm.hpp"
#include "kernels/cuda/tensor_ops.hpp"

namespace gl::kernels::cuda {
namespace {

using std::int64_t;

constexpr int kBlock = 256;  // threads per block of the element-wise kernels

/// This thread's first element and the step to its next one (a grid-stride loop).
__device__ __forceinline__ int64_t first_index() { return int64_t(blockIdx.x) * blockDim.x + threadIdx.x; }
__device__ __forceinline__ int64_t grid_stride() { return int64_t(gridDim.x) * blockDim.x; }

/// Blocks for n elements: enough to fill a GPU, capped so the grid stays small (the
/// grid-stride loop covers the rest).
inline unsigned blocks_for(int64_t n) {
    const int64_t blocks = (n + kBlock - 1) / kBlock;
    return static_cast<unsigned>(blocks < 4096 ? (blocks > 0 ? blocks : 1) : 4096);
}

/// Offset in memory of the element at row-major position @p i of @p shape.
__device__ __forceinline__ int64_t offset_of(int64_t i, int rank, const int64_t* shape, const int64_t* strides) {
    int64_t offset = 0;
    for (int d = rank - 1; d >= 0; --d) {  // peel off the fastest-moving index first
        offset += (i % shape[d]) * strides[d];
        i /= shape[d];
    }
    return offset;
}

// ---- element-wise ----

__global__ void fill_kernel(int64_t n, float value, float* out) {
    for (int64_t i = first_index(); i < n; i += grid_stride()) out[i] = value;
}

template <class T>
__global__ void gather_kernel(int64_t n, StridedIndex index, const T* src, T* dst) {
    for (int64_t i = first_index(); i < n; i += grid_stride())
        dst[i] = src[offset_of(i, index.rank, index.shape, index.strides)];
}

__device__ __forceinline__ float apply(BinaryOp op, float a, float b) {
    switch (op) {
        case BinaryOp::add: return a + b;
        case BinaryOp::sub: return a - b;
        case BinaryOp::mul: return a * b;
        case BinaryOp::relu_mask: return b > 0.0f ? a : 0.0f;
    }
    return 0.0f;
}

__global__ void binary_kernel(BinaryOp op, int64_t n, BroadcastIndex index, const float* a, const float* b,
                              float* out) {
    for (int64_t i = first_index(); i < n; i += grid_stride()) {
        const float x = a[offset_of(i, index.rank, index.shape, index.a_strides)];
        const float y = b[offset_of(i, index.rank, index.shape, index.b_strides)];
        out[i] = apply(op, x, y);
    }
}

__global__ void scale_kernel(int64_t n, float s, const float* a, float* out) {
    for (int64_t i = first_index(); i < n; i += grid_stride()) out[i] = s * a[i];
}

__global__ void relu_kernel(int64_t n, const float* a, float* out) {
    for (int64_t i = first_index(); i < n; i += grid_stride()) out[i] = a[i] > 0.0f ? a[i] : 0.0f;
}

__global__ void axpy_kernel(int64_t n, float alpha, const float* x, float* y) {
    for (int64_t i = first_index(); i < n; i += grid_stride()) y[i] += alpha * x[i];
}

// ---- reductions ----

/// Block o sums output element o: its threads stride over the reduced elements, then halve
/// the partial sums in shared memory until one is left.
template <int BLOCK>
__global__ void sum_kernel(ReduceIndex index, int64_t reduced_count, const float* in, float* out) {
    __shared__ float partial[BLOCK];
    const int64_t output = blockIdx.x;
    float acc = 0.0f;
    for (int64_t r = threadIdx.x; r < reduced_count; r += BLOCK) {
        // The input element: kept dimensions take their digits from `output`, summed ones from `r`.
        int64_t o = output, k = r, offset = 0;
        for (int d = index.rank - 1; d >= 0; --d) {
            int64_t& digits = index.reduced[d] ? k : o;
            offset += (digits % index.shape[d]) * index.strides[d];
            digits /= index.shape[d];
        }
        acc += in[offset];
    }
    partial[threadIdx.x] = acc;
    __syncthreads();  // every partial sum is written before the tree reads them
    for (int half = BLOCK / 2; half > 0; half /= 2) {
        if (int(threadIdx.x) < half) partial[threadIdx.x] += partial[threadIdx.x + half];
        __syncthreads();  // this level is done before the next one reads it
    }
    if (threadIdx.x == 0) out[output] = partial[0];
}

__global__ void argmax_rows_kernel(int64_t rows, int64_t cols, const float* x, std::int32_t* out) {
    for (int64_t r = first_index(); r < rows; r += grid_stride()) {
        const float* row = x + r * cols;
        int64_t best = 0;
        for (int64_t j = 1; j < cols; ++j)
            if (row[j] > row[best]) best = j;  // the first maximum, as std::max_element
        out[r] = static_cast<std::int32_t>(best);
    }
}

__global__ void equal_kernel(int64_t n, const std::int32_t* a, const std::int32_t* b, float* out) {
    for (int64_t i = first_index(); i < n; i += grid_stride()) out[i] = a[i] == b[i] ? 1.0f : 0.0f;
}

// ---- the loss: one thread per row (a row is a few classes) ----

__global__ void log_softmax_rows_kernel(int64_t rows, int64_t cols, const float* x, float* y) {
    for (int64_t r = first_index(); r < rows; r += grid_stride()) {
        const float* in = x + r * cols;
        float* o = y + r * cols;
        float m = in[0];
        for (int64_t j = 1; j < cols; ++j) m = fmaxf(m, in[j]);  // subtract the max: no overflow
        float total = 0.0f;
        for (int64_t j = 0; j < cols; ++j) total += expf(in[j] - m);
        const float log_total = logf(total);
        for (int64_t j = 0; j < cols; ++j) o[j] = (in[j] - m) - log_total;
    }
}

__global__ void log_softmax_backward_kernel(int64_t rows, int64_t cols, const float* y, const float* g, float* gx) {
    for (int64_t r = first_index(); r < rows; r += grid_stride()) {
        float row_sum = 0.0f;
        for (int64_t j = 0; j < cols; ++j) row_sum += g[r * cols + j];
        for (int64_t j = 0; j < cols; ++j) gx[r * cols + j] = g[r * cols + j] - expf(y[r * cols + j]) * row_sum;
    }
}

__global__ void nll_rows_kernel(int64_t rows, int64_t cols, const float* log_probs, const std::int32_t* targets,
                                float* out) {
    for (int64_t r = first_index(); r < rows; r += grid_stride()) {
        const std::int32_t t = targets[r];
        // A bad target cannot throw from a kernel: it poisons the loss instead (a GPU framework
        // raises a device-side assert here). Labels are checked when a data set is loaded.
        out[r] = t >= 0 && t < cols ? -log_probs[r * cols + t] : nanf("");
    }
}

__global__ void cross_entropy_backward_kernel(int64_t rows, int64_t cols, const float* log_probs,
                                              const std::int32_t* targets, const float* g, float* gx) {
    const float scale = g[0] / static_cast<float>(rows);  // read on the device: no host sync
    for (int64_t i = first_index(); i < rows * cols; i += grid_stride()) {
        const int64_t r = i / cols, j = i % cols;
        const float onehot = j == targets[r] ? 1.0f : 0.0f;
        gx[i] = (expf(log_probs[i]) - onehot) * scale;
    }
}

// ---- max pooling ----

/// The first and one-past-last input rows (or columns) of a window starting at @p start,
/// clipped to [0, size): the padding's taps never win, so they are not visited.
__device__ __forceinline__ int64_t window_first(int64_t start) { return start > 0 ? start : 0; }
__device__ __forceinline__ int64_t window_last(int64_t start, int64_t kernel, int64_t size) {
    return start + kernel < size ? start + kernel : size;
}

/// A thread per output: the largest value of its window and where it is in the plane.
__global__ void max_pool_forward_kernel(PoolDims d, const float* x, float* y, std::int32_t* argmax) {
    const int64_t outputs = d.planes * d.P * d.Q;
    for (int64_t i = first_index(); i < outputs; i += grid_stride()) {
        const int64_t q = i % d.Q, p = (i / d.Q) % d.P, plane = i / (d.P * d.Q);
        const float* in = x + plane * d.H * d.W;
        const int64_t row0 = p * d.stride - d.pad, col0 = q * d.stride - d.pad;
        const int64_t h_first = window_first(row0), h_last = window_last(row0, d.kernel, d.H);
        const int64_t w_first = window_first(col0), w_last = window_last(col0, d.kernel, d.W);
        int64_t best_at = h_first * d.W + w_first;
        float best = in[best_at];
        for (int64_t ih = h_first; ih < h_last; ++ih)
            for (int64_t iw = w_first; iw < w_last; ++iw)
                if (in[ih * d.W + iw] > best) best = in[ih * d.W + iw], best_at = ih * d.W + iw;
        y[i] = best;
        argmax[i] = static_cast<std::int32_t>(best_at);
    }
}

/// The outputs p whose window (p * stride - pad, kernel taps) covers input row @p ih:
/// [first, last), within [0, outputs).
__device__ __forceinline__ void covering_windows(int64_t ih, int64_t kernel, int64_t stride, int64_t pad,
                                                 int64_t outputs, int64_t& first, int64_t& last) {
    const int64_t lowest_start = ih + pad - kernel + 1;  // p * stride >= this
    first = lowest_start > 0 ? (lowest_start + stride - 1) / stride : 0;
    const int64_t highest = (ih + pad) / stride + 1;     // p * stride <= ih + pad
    last = highest < outputs ? highest : outputs;
}

/// A thread per input element: it gathers the gradients of the windows whose maximum it
/// was, so no two threads write one element and no atomics are needed (windows overlap when
/// stride < kernel). The windows are visited in output order, as the CPU adds them.
__global__ void max_pool_backward_kernel(PoolDims d, const float* dy, const std::int32_t* argmax, float* dx) {
    const int64_t inputs = d.planes * d.H * d.W;
    for (int64_t i = first_index(); i < inputs; i += grid_stride()) {
        const int64_t iw = i % d.W, ih = (i / d.W) % d.H, plane = i / (d.H * d.W);
        const int64_t here = ih * d.W + iw, out0 = plane * d.P * d.Q;
        int64_t p_first, p_last, q_first, q_last;
        covering_windows(ih, d.kernel, d.stride, d.pad, d.P, p_first, p_last);
        covering_windows(iw, d.kernel, d.stride, d.pad, d.Q, q_first, q_last);
        float sum = 0.0f;
        for (int64_t p = p_first; p < p_last; ++p)
            for (int64_t q = q_first; q < q_last; ++q)
                if (argmax[out0 + p * d.Q + q] == here) sum += dy[out0 + p * d.Q + q];
        dx[i] = sum;
    }
}

// ---- optimizers ----

__global__ void sgd_kernel(int64_t n, float* p, const float* g, float* v, float lr, float momentum, float wd) {
    for (int64_t i = first_index(); i < n; i += grid_stride()) {
        const float d = g[i] + wd * p[i];
        v[i] = momentum * v[i] + d;
        p[i] -= lr * v[i];
    }
}

__global__ void adam_kernel(int64_t n, float* p, const float* g, float* m, float* v, AdamStep s) {
    for (int64_t i = first_index(); i < n; i += grid_stride()) {
        const float d = g[i] + s.wd * p[i];
        m[i] = s.beta1 * m[i] + (1.0f - s.beta1) * d;
        v[i] = s.beta2 * v[i] + (1.0f - s.beta2) * d * d;
        p[i] -= s.step_size * m[i] / (sqrtf(v[i]) * s.inv_sqrt_c2 + s.eps);
    }
}

// ---- 16-bit casts ----

__global__ void float_to_half_kernel(int64_t n, const float* in, __half* out) {
    for (int64_t i = first_index(); i < n; i += grid_stride()) out[i] = __float2half_rn(in[i]);
}
__global__ void half_to_float_kernel(int64_t n, const __half* in, float* out) {
    for (int64_t i = first_index(); i < n; i += grid_stride()) out[i] = __half2float(in[i]);
}
__global__ void float_to_bf16_kernel(int64_t n, const float* in, __nv_bfloat16* out) {
    for (int64_t i = first_index(); i < n; i += grid_stride()) out[i] = __float2bfloat16_rn(in[i]);
}
__global__ void bf16_to_float_kernel(int64_t n, const __nv_bfloat16* in, float* out) {
    for (int64_t i = first_index(); i < n; i += grid_stride()) out[i] = __bfloat162float(in[i]);
}

// ---- host side: launches on the runtime this file is compiled for ----

/// Launches an element-wise kernel over @p n elements (nothing for n = 0: CUDA rejects an
/// empty grid).
template <class... Params, class... Args>
void launch_n(void (*kernel)(Params...), int64_t n, Args&&... args) {
    if (n <= 0) return;
    gl::cuda::launch(kernel, dim3(blocks_for(n)), dim3(kBlock), 0, std::forward<Args>(args)...);
}

void gather(int64_t n, int element_bytes, const StridedIndex& index, const void* src, void* dst) {
    switch (element_bytes) {
        case 1: return launch_n(gather_kernel<std::uint8_t>, n, n, index, static_cast<const std::uint8_t*>(src), static_cast<std::uint8_t*>(dst));
        case 2: return launch_n(gather_kernel<std::uint16_t>, n, n, index, static_cast<const std::uint16_t*>(src), static_cast<std::uint16_t*>(dst));
        case 4: return launch_n(gather_kernel<std::uint32_t>, n, n, index, static_cast<const std::uint32_t*>(src), static_cast<std::uint32_t*>(dst));
        case 8: return launch_n(gather_kernel<std::uint64_t>, n, n, index, static_cast<const std::uint64_t*>(src), static_cast<std::uint64_t*>(dst));
        default: throw gl::Error("device gather: elements of " + std::to_string(element_bytes) + " bytes are not supported");
    }
}

void sum(const ReduceIndex& index, int64_t outputs, const float* in, float* out) {
    if (outputs <= 0) return;
    int64_t reduced_count = 1;
    for (int d = 0; d < index.rank; ++d)
        if (index.reduced[d]) reduced_count *= index.shape[d];
    // Small sums (a bias gradient over a batch of 64) waste most of a large block.
    if (reduced_count <= 64)
        gl::cuda::launch(sum_kernel<64>, dim3(static_cast<unsigned>(outputs)), dim3(64), 0, index, reduced_count, in, out);
    else
        gl::cuda::launch(sum_kernel<256>, dim3(static_cast<unsigned>(outputs)), dim3(256), 0, index, reduced_count, in, out);
}

void cross_entropy_backward(int64_t rows, int64_t cols, const float* lp, const std::int32_t* t, const float* g,
                            float* gx) {
    launch_n(cross_entropy_backward_kernel, rows * cols, rows, cols, lp, t, g, gx);
}

DeviceKernels make_device_kernels(const char* runtime) {
    DeviceKernels k{};
    k.runtime = runtime;
    k.malloc = [](std::size_t bytes) { return gl::cuda::malloc(bytes); };
    k.free = [](void* p) { gl::cuda::free(p); };
    k.memcpy = [](void* dst, const void* src, std::size_t bytes, gl::cuda::CopyKind kind) {
        gl::cuda::memcpy(dst, src, bytes, kind);
    };
    k.memset = [](void* p, int value, std::size_t bytes) { gl::cuda::memset(p, value, bytes); };
    k.synchronize = [] { gl::cuda::synchronize(); };
    k.host_alloc = [](std::size_t bytes) { return gl::cuda::host_alloc(bytes); };
    k.host_free = [](void* p) { gl::cuda::host_free(p); };
    k.stream_create = []() -> void* { return new gl::cuda::Stream(); };
    k.stream_destroy = [](void* s) { delete static_cast<gl::cuda::Stream*>(s); };
    k.stream_id = [](void* s) { return static_cast<gl::cuda::Stream*>(s)->id(); };
    k.event_create = []() -> void* { return new gl::cuda::Event(); };
    k.event_destroy = [](void* e) { delete static_cast<gl::cuda::Event*>(e); };
    k.event_record = [](void* e, void* s) {
        if (s) static_cast<gl::cuda::Event*>(e)->record(*static_cast<gl::cuda::Stream*>(s));
        else static_cast<gl::cuda::Event*>(e)->record();
    };
    k.stream_wait = [](void* s, void* e) {
        const auto& event = *static_cast<const gl::cuda::Event*>(e);
        if (s) static_cast<gl::cuda::Stream*>(s)->wait(event);
        else gl::cuda::default_stream_wait(event);
    };
    k.event_query = [](void* e) { return static_cast<const gl::cuda::Event*>(e)->query(); };
    k.event_synchronize = [](void* e) { static_cast<gl::cuda::Event*>(e)->synchronize(); };
    k.memcpy_async = [](void* dst, const void* src, std::size_t bytes, gl::cuda::CopyKind kind, void* s) {
        gl::cuda::memcpy_async(dst, src, bytes, kind, *static_cast<gl::cuda::Stream*>(s));
    };
    k.fill = [](int64_t n, float value, float* out) { launch_n(fill_kernel, n, n, value, out); };
    k.gather = &gather;
    k.binary = [](BinaryOp op, int64_t n, const BroadcastIndex& index, const float* a, const float* b, float* out) {
        launch_n(binary_kernel, n, op, n, index, a, b, out);
    };
    k.scale = [](int64_t n, float s, const float* a, float* out) { launch_n(scale_kernel, n, n, s, a, out); };
    k.relu = [](int64_t n, const float* a, float* out) { launch_n(relu_kernel, n, n, a, out); };
    k.axpy = [](int64_t n, float alpha, const float* x, float* y) { launch_n(axpy_kernel, n, n, alpha, x, y); };
    k.sum = &sum;
    k.argmax_rows = [](int64_t rows, int64_t cols, const float* x, std::int32_t* out) {
        launch_n(argmax_rows_kernel, rows, rows, cols, x, out);
    };
    k.equal = [](int64_t n, const std::int32_t* a, const std::int32_t* b, float* out) {
        launch_n(equal_kernel, n, n, a, b, out);
    };
    k.log_softmax_rows = [](int64_t rows, int64_t cols, const float* x, float* y) {
        launch_n(log_softmax_rows_kernel, rows, rows, cols, x, y);
    };
    k.log_softmax_backward = [](int64_t rows, int64_t cols, const float* y, const float* g, float* gx) {
        launch_n(log_softmax_backward_kernel, rows, rows, cols, y, g, gx);
    };
    k.nll_rows = [](int64_t rows, int64_t cols, const float* lp, const std::int32_t* t, float* out) {
        launch_n(nll_rows_kernel, rows, rows, cols, lp, t, out);
    };
    k.cross_entropy_backward = &cross_entropy_backward;
    k.sgemm = [](int M, int N, int K, const float* A, const float* B, float* C) {
        launch_sgemm<gl::cuda::Direct>(cuda_sgemm_best_version(), M, N, K, A, B, C);
    };
    k.conv = [](conv::ConvPass pass, const conv::ConvGeometry& g, const float* a, const float* b, float* out) {
        launch_conv(2, pass, g, a, b, out);  // the implicit GEMM: the family's fastest
    };
    k.max_pool_forward = [](const PoolDims& d, const float* x, float* y, std::int32_t* argmax) {
        launch_n(max_pool_forward_kernel, d.planes * d.P * d.Q, d, x, y, argmax);
    };
    k.max_pool_backward = [](const PoolDims& d, const float* dy, const std::int32_t* argmax, float* dx) {
        launch_n(max_pool_backward_kernel, d.planes * d.H * d.W, d, dy, argmax, dx);
    };
    k.sgd_step = [](int64_t n, float* p, const float* g, float* v, float lr, float momentum, float wd) {
        launch_n(sgd_kernel, n, n, p, g, v, lr, momentum, wd);
    };
    k.adam_step = [](int64_t n, float* p, const float* g, float* m, float* v, const AdamStep& s) {
        launch_n(adam_kernel, n, n, p, g, m, v, s);
    };
    k.float_to_half = [](int64_t n, const float* in, std::uint16_t* out) {
        launch_n(float_to_half_kernel, n, n, in, reinterpret_cast<__half*>(out));
    };
    k.half_to_float = [](int64_t n, const std::uint16_t* in, float* out) {
        launch_n(half_to_float_kernel, n, n, reinterpret_cast<const __half*>(in), out);
    };
    k.float_to_bf16 = [](int64_t n, const float* in, std::uint16_t* out) {
        launch_n(float_to_bf16_kernel, n, n, in, reinterpret_cast<__nv_bfloat16*>(out));
    };
    k.bf16_to_float = [](int64_t n, const std::uint16_t* in, float* out) {
        launch_n(bf16_to_float_kernel, n, n, reinterpret_cast<const __nv_bfloat16*>(in), out);
    };
    return k;
}

}  // namespace
}  // namespace gl::kernels::cuda
