/// @file
/// @brief The one header a CUDA source file (.cuh/.cu) includes: CUDA itself under nvcc,
/// the CPU runtime under a host compiler.
///
/// This is gradlab's only macro layer. Kernels are written once, in CUDA C++; compiled by
/// g++ the CUDA keywords become ordinary C++:
///
/// | CUDA                    | on the CPU runtime                                             |
/// |-------------------------|----------------------------------------------------------------|
/// | `__global__`, `__device__`, `__host__` | nothing: kernels are plain functions            |
/// | `__shared__`            | `static thread_local`: one copy per OS thread, and one OS thread runs a block at a time, so one copy per running block |
/// | `extern __shared__ T s[]` | `gl::cuda::dynamic_shared<T>()` (the same call works under nvcc) |
/// | threadIdx, blockIdx, blockDim, gridDim | thread_local variables the scheduler sets (thread_index.hpp) |
/// | `__syncthreads()`, `__syncwarp()` | a switch to the block scheduler (sync.hpp)          |
/// | shuffles and votes      | a warp exchange through the scheduler (warp_ops.hpp)           |
/// | atomics                 | std::atomic_ref (atomics.hpp)                                  |
/// | `__dp4a`                | four byte products summed in a loop (int_intrinsics.hpp)       |
/// | `kernel<<<g, b, s>>>(args)` | `gl::cuda::launch(kernel, g, b, s, args)` on both (launch.hpp) |
///
/// and the host API (host_api.hpp) reads the same on both. Memory access policies
/// (access.hpp) let a kernel be instantiated with counted pointers on the CPU.
#pragma once

#if defined(__CUDACC__)

#include <cuda_runtime.h>

#else  // a host compiler: the CPU runtime

/// A kernel (launched from the host): an ordinary function here.
#define __global__
/// A function called from device code: an ordinary function here.
#define __device__
/// A function callable from the host: every function is, here.
#define __host__
/// Inline the device function into its caller, as nvcc would.
#define __forceinline__ inline __attribute__((always_inline))
/// Register and occupancy hints for nvcc; nothing to tune on the CPU.
#define __launch_bounds__(...)
/// Per-block memory: one copy per OS thread, and an OS thread runs one block at a time.
#define __shared__ static thread_local

#include "cuda_cpu/atomics.hpp"
#include "cuda_cpu/cpu_runtime.hpp"
#include "cuda_cpu/int_intrinsics.hpp"
#include "cuda_cpu/memory_counters.hpp"
#include "cuda_cpu/sync.hpp"
#include "cuda_cpu/thread_index.hpp"
#include "cuda_cpu/vector_types.hpp"
#include "cuda_cpu/warp_ops.hpp"

#endif

#include "cuda_cpu/access.hpp"
#include "cuda_cpu/error.hpp"
#include "cuda_cpu/host_api.hpp"
#include "cuda_cpu/launch.hpp"
