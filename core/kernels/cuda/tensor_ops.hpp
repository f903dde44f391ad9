/// @file
/// @brief Host entry points of the CUDA kernels a training step needs on a device
/// (tensor_ops.cuh): element-wise and broadcast arithmetic, strided copies, reductions,
/// log-softmax and cross-entropy, the SGD and Adam updates, 16-bit casts, the SGEMM
/// family's best version, the convolution's implicit GEMM and max pooling (the CNN); plus
/// the runtime's memory calls. One table per runtime.
///
/// Plain C++: the kernels are written once in tensor_ops.cuh and compiled twice, by g++ for
/// the CPU runtime (tensor_ops_cpu.cpp) and by nvcc for a GPU (tensor_ops_gpu.cu). Each
/// compilation fills a DeviceKernels table with its own launches, so code above (device/)
/// picks a runtime once and calls the same entries on both. Pointers are that runtime's
/// device memory; every entry returns once the work is queued (on the CPU runtime, work on
/// the default stream is done by then; work on a stream of its own runs on its worker).
/// Knows nothing about tensors: shapes arrive as the small index structs below.
#pragma once

#include <cstddef>
#include <cstdint>

#include "cuda_cpu/host_api.hpp"
#include "kernels/cpu/conv/autotune.hpp"  // ConvPass
#include "kernels/cpu/conv/conv.hpp"
#include "kernels/cpu/elementwise.hpp"

namespace gl::kernels {

/// The most dimensions a device kernel indexes (tensors of higher rank are rejected above).
constexpr int kMaxDeviceDims = 8;

/// How to find element i (row-major over @p shape) in memory: its offset is the sum of
/// index[d] * strides[d]. Passed to kernels by value.
struct StridedIndex {
    int rank = 0;                                ///< dimensions in use
    std::int64_t shape[kMaxDeviceDims] = {};     ///< extents, outermost first
    std::int64_t strides[kMaxDeviceDims] = {};   ///< elements per step in each dimension
};

/// Two operands read over one broadcast output shape (stride 0 along broadcast dimensions).
struct BroadcastIndex {
    int rank = 0;                                 ///< dimensions of the output
    std::int64_t shape[kMaxDeviceDims] = {};      ///< output extents
    std::int64_t a_strides[kMaxDeviceDims] = {};  ///< first operand's strides
    std::int64_t b_strides[kMaxDeviceDims] = {};  ///< second operand's strides
};

/// A sum over some dimensions: the input's shape and strides, and which dimensions are
/// summed. The output is contiguous with the summed dimensions kept as extent 1.
struct ReduceIndex {
    int rank = 0;                                ///< input dimensions
    std::int64_t shape[kMaxDeviceDims] = {};     ///< input extents
    std::int64_t strides[kMaxDeviceDims] = {};   ///< input strides
    bool reduced[kMaxDeviceDims] = {};           ///< summed dimensions
};

/// The windows of a max pooling over @p planes NCHW planes of H x W: square windows of
/// @p kernel taps, @p stride apart, @p pad rows and columns of padding that never win;
/// P x Q outputs per plane.
struct PoolDims {
    std::int64_t planes = 0;  ///< N * C
    std::int64_t H = 0;       ///< input rows
    std::int64_t W = 0;       ///< input columns
    std::int64_t kernel = 1;  ///< window side
    std::int64_t stride = 1;  ///< step between windows
    std::int64_t pad = 0;     ///< padding on each side
    std::int64_t P = 0;       ///< output rows
    std::int64_t Q = 0;       ///< output columns
};

/// Element-wise binary operations of the broadcast kernel.
enum class BinaryOp : std::uint8_t {
    add,        ///< a + b
    sub,        ///< a - b
    mul,        ///< a * b
    relu_mask,  ///< a where b > 0, else 0 (ReLU's backward: a = gradient, b = output)
};

/// One runtime's device memory calls and kernels (float32 unless a name says otherwise).
struct DeviceKernels {
    const char* runtime;  ///< "CPU runtime" or "GPU"
    // ---- memory (gl::cuda::malloc, free, memcpy, memset, synchronize) ----
    void* (*malloc)(std::size_t bytes);                                        ///< device memory
    void (*free)(void* ptr);                                                   ///< frees malloc's memory
    void (*memcpy)(void* dst, const void* src, std::size_t bytes, gl::cuda::CopyKind kind);  ///< a copy
    void (*memset)(void* ptr, int value, std::size_t bytes);                   ///< fills bytes
    void (*synchronize)();                                                     ///< waits for the device
    void* (*host_alloc)(std::size_t bytes);                                    ///< page-locked host memory
    void (*host_free)(void* ptr);                                              ///< frees host_alloc's memory
    // ---- a stream and events (cuda_cpu/streams.hpp) behind opaque handles; nullptr as a
    // stream is the default stream, where every kernel below runs ----
    void* (*stream_create)();                            ///< a new stream (non-blocking, as cudaStreamNonBlocking)
    void (*stream_destroy)(void* stream);                ///< waits for its work, then destroys it
    int (*stream_id)(void* stream);                      ///< its Stream::id() (the timeline's stream number)
    void* (*event_create)();                             ///< a new event
    void (*event_destroy)(void* event);                  ///< destroys it
    void (*event_record)(void* event, void* stream);     ///< marks the point @p stream has reached
    void (*stream_wait)(void* stream, void* event);      ///< @p stream's later work waits for the mark
    bool (*event_query)(void* event);                    ///< whether the mark completed (no waiting)
    void (*event_synchronize)(void* event);              ///< the host waits for the mark
    /// Queues a copy on @p stream and returns (asynchronous from host_alloc's memory).
    void (*memcpy_async)(void* dst, const void* src, std::size_t bytes, gl::cuda::CopyKind kind, void* stream);
    // ---- element-wise ----
    /// out[i] = value.
    void (*fill)(std::int64_t n, float value, float* out);
    /// dst[i] = src[offset of element i], elements of @p element_bytes (1, 2, 4 or 8).
    void (*gather)(std::int64_t n, int element_bytes, const StridedIndex& src_index, const void* src, void* dst);
    /// out[i] = op(a[..], b[..]) over the broadcast shape, out contiguous.
    void (*binary)(BinaryOp op, std::int64_t n, const BroadcastIndex& index, const float* a, const float* b,
                   float* out);
    /// out[i] = s * a[i].
    void (*scale)(std::int64_t n, float s, const float* a, float* out);
    /// out[i] = max(a[i], 0).
    void (*relu)(std::int64_t n, const float* a, float* out);
    /// y[i] += alpha * x[i].
    void (*axpy)(std::int64_t n, float alpha, const float* x, float* y);
    // ---- reductions ----
    /// out = the sum of @p in over index.reduced (one block per output element).
    void (*sum)(const ReduceIndex& index, std::int64_t outputs, const float* in, float* out);
    /// out[r] = index of the largest of row r of a [rows, cols] array (int32).
    void (*argmax_rows)(std::int64_t rows, std::int64_t cols, const float* x, std::int32_t* out);
    /// out[i] = 1 where a[i] == b[i], else 0 (int32 inputs; counts correct predictions).
    void (*equal)(std::int64_t n, const std::int32_t* a, const std::int32_t* b, float* out);
    // ---- the loss ----
    /// Row-wise log-softmax of a [rows, cols] array.
    void (*log_softmax_rows)(std::int64_t rows, std::int64_t cols, const float* x, float* y);
    /// gx = g - exp(y) * rowsum(g), y the forward's output.
    void (*log_softmax_backward)(std::int64_t rows, std::int64_t cols, const float* y, const float* g, float* gx);
    /// out[r] = -log_probs[r, targets[r]] (NaN for a target outside [0, cols)).
    void (*nll_rows)(std::int64_t rows, std::int64_t cols, const float* log_probs, const std::int32_t* targets,
                     float* out);
    /// gx = (exp(log_probs) - onehot(targets)) * g[0] / rows: g stays on the device.
    void (*cross_entropy_backward)(std::int64_t rows, std::int64_t cols, const float* log_probs,
                                   const std::int32_t* targets, const float* g, float* gx);
    // ---- linear algebra ----
    /// C = A B, contiguous row-major (the SGEMM family's best version).
    void (*sgemm)(int M, int N, int K, const float* A, const float* B, float* C);
    // ---- convolution and pooling (the CNN) ----
    /// Pass @p pass of the convolution @p g by the implicit-GEMM kernel (kernels/cuda/conv.cuh,
    /// version 2), operands as there: (x, w) -> y, (dy, w) -> dx, (x, dy) -> dw, overwritten.
    void (*conv)(conv::ConvPass pass, const conv::ConvGeometry& g, const float* a, const float* b, float* out);
    /// y = the largest value of each window, argmax = where it is in its plane (ih * W + iw);
    /// ties and NaN as on the CPU (the first tap starts, a later one wins only if larger).
    void (*max_pool_forward)(const PoolDims& d, const float* x, float* y, std::int32_t* argmax);
    /// dx[i] = the sum of dy over the windows whose maximum was input element i.
    void (*max_pool_backward)(const PoolDims& d, const float* dy, const std::int32_t* argmax, float* dx);
    // ---- optimizers (the same updates as kernels/cpu/elementwise.hpp) ----
    /// SGD with momentum and weight decay.
    void (*sgd_step)(std::int64_t n, float* p, const float* g, float* v, float lr, float momentum, float wd);
    /// Adam with bias correction folded into @p s.
    void (*adam_step)(std::int64_t n, float* p, const float* g, float* m, float* v, const AdamStep& s);
    // ---- 16-bit casts (round to nearest even), 16-bit values as bit patterns ----
    void (*float_to_half)(std::int64_t n, const float* in, std::uint16_t* out);      ///< float -> half
    void (*half_to_float)(std::int64_t n, const std::uint16_t* in, float* out);      ///< half -> float
    void (*float_to_bf16)(std::int64_t n, const float* in, std::uint16_t* out);      ///< float -> bfloat16
    void (*bf16_to_float)(std::int64_t n, const std::uint16_t* in, float* out);      ///< bfloat16 -> float
};

/// The kernels on the CPU runtime (always available).
const DeviceKernels& cpu_runtime_kernels();

/// The kernels on a GPU. Builds without nvcc have none: throws gl::cuda::Error (no_device).
/// Whether a GPU is present is asked elsewhere (cuda_cpu/device_status.hpp).
const DeviceKernels& gpu_kernels();

}  // namespace gl::kernels
