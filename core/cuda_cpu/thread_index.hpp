/// @file
/// @brief threadIdx, blockIdx, blockDim, gridDim and warpSize on the CPU runtime.
///
/// On a GPU these are special registers. Here they are ordinary thread_local variables:
/// an OS thread runs one CUDA thread at a time, and the block scheduler writes the indices
/// of the CUDA thread it is about to resume just before it switches to that thread's fiber
/// (block_scheduler.cpp, BlockScheduler::enter). Kernels only read them.
#pragma once

#include "cuda_cpu/vector_types.hpp"

namespace gl::cuda::inline cpu {

/// The index of the running CUDA thread inside its block.
inline thread_local uint3 threadIdx{0, 0, 0};
/// The index of the running block inside the grid.
inline thread_local uint3 blockIdx{0, 0, 0};
/// The block size of the running launch.
inline thread_local dim3 blockDim{1, 1, 1};
/// The grid size of the running launch.
inline thread_local dim3 gridDim{1, 1, 1};
/// Threads per warp, as on every NVIDIA GPU so far.
inline constexpr int warpSize = 32;

}  // namespace gl::cuda::cpu

using gl::cuda::cpu::blockDim;
using gl::cuda::cpu::blockIdx;
using gl::cuda::cpu::gridDim;
using gl::cuda::cpu::threadIdx;
using gl::cuda::cpu::warpSize;
