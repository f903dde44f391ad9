/// @file
/// @brief Pinned host memory from a device's runtime, for the data loader's pin_memory.
///
/// Owns: the PinnedMemoryProvider a loader feeding a device uses, so each batch is
/// assembled in the runtime's own page-locked memory (cudaHostAlloc on a GPU, the CPU
/// runtime's host_alloc on cuda_cpu) and its copy to the device needs no staging (DATA-3).
#pragma once

#include "data/pinned_memory.hpp"
#include "tensor/dtype.hpp"

namespace gl::device {

/// The process-wide provider of page-locked host memory of @p device's runtime (cuda or
/// cuda_cpu; the CPU is refused: it uses default_pinned_provider()). When the runtime
/// refuses to lock more (`ulimit -l` on the CPU runtime), a batch gets ordinary memory,
/// counted in unlocked_fallback_bytes(): a batch is never lost for want of pinning.
PinnedMemoryProvider& pinned_host_memory(Device device);

}  // namespace gl::device
