/// @file
/// @brief Devices a tensor can live on: which runtime runs a device's kernels, its memory,
/// copies between host and device, and the counted host synchronisations.
///
/// Owns: device memory (device_alloc / device_free: the one place tensors get it, so a
/// caching allocator can sit behind it), the copies, and counting them. The CUDA kernels
/// themselves are in kernels/cuda/ (tensor_ops.hpp); which op calls which kernel is in
/// device_ops.hpp. Knows nothing about autograd, modules or training.
///
/// Two devices run CUDA kernels: `cuda` (a GPU, the kernels compiled by nvcc) and
/// `cuda_cpu` (the same kernel source on the CUDA-on-CPU runtime, core/cuda_cpu/), so every
/// device path is tested without a GPU and behaves the same on one.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/cuda/tensor_ops.hpp"
#include "memory/caching_allocator.hpp"
#include "tensor/allocator.hpp"
#include "tensor/dtype.hpp"

namespace gl::device {

/// Throws gl::Error when @p device cannot run kernels here: for `cuda` without a GPU (or
/// in a build without CUDA) the message carries the driver's reason and the hint to use
/// `cuda_cpu`. Nothing to check for `cpu` and `cuda_cpu`.
void check_available(Device device);

/// The memory calls and kernels of the runtime behind @p device (not the CPU: its kernels
/// are kernels/cpu/). Checks availability first.
const kernels::DeviceKernels& kernels_for(Device device);

/// @p bytes of memory on @p device straight from the runtime (cudaMalloc; nullptr for 0).
/// Tensors do not call this directly: they go through device_allocator()'s cache.
void* device_alloc(Device device, std::size_t bytes);
/// Returns memory from device_alloc to the runtime (cudaFree; nullptr is fine). On a GPU
/// cudaFree waits for the device: a synchronisation transfer_stats does not see.
void device_free(Device device, void* ptr, std::size_t bytes);
/// The Allocator (tensor/allocator.hpp) that device tensors' Storage uses: a caching
/// allocator (memory/caching_allocator.hpp) in front of device_alloc and device_free, as
/// PyTorch's CUDA caching allocator is, so a step's freed activations are reused by the
/// next step instead of being returned with a synchronising cudaFree.
Allocator& device_allocator(Device device);
/// The statistics of @p device's cache (hits, misses, bytes in use and cached, peak
/// reserved): the same API as the CPU caching allocator's.
memory::CacheStats device_cache_stats(Device device);
/// Returns @p device's cached (free) blocks to the runtime; returns the bytes released.
std::size_t device_empty_cache(Device device);

/// Host <-> device traffic since the program started (or the last reset_transfer_stats).
struct TransferStats {
    std::int64_t host_syncs = 0;        ///< times the host waited for a device (a copy to the host, synchronize())
    std::int64_t host_to_device = 0;    ///< copies from the host to a device
    std::int64_t host_to_device_bytes = 0;  ///< their bytes
    std::int64_t device_to_host = 0;    ///< copies from a device to the host
};
/// The counts so far (all devices, all threads).
TransferStats transfer_stats();
/// Sets every count to zero.
void reset_transfer_stats();

/// Copies @p bytes from @p src on @p src_device to @p dst on @p dst_device (either may be
/// the CPU; two different CUDA runtimes are not supported). A copy to the host waits for the
/// device: it is counted as a host synchronisation.
void copy(Device dst_device, void* dst, Device src_device, const void* src, std::size_t bytes);

/// Waits for all work queued on @p device (counted as a host synchronisation).
void synchronize(Device device);

/// Queues a copy of @p bytes from host memory @p src to @p dst on @p device, on @p stream
/// (a handle from kernels_for(device).stream_create), and returns: counted like copy()'s
/// host-to-device copies. Without waiting only when @p src is the runtime's page-locked
/// memory (host_alloc); from pageable memory the host waits, as cudaMemcpyAsync makes it.
void copy_to_device_async(Device device, void* dst, const void* src, std::size_t bytes, void* stream);

/// The host waits until @p event (a handle from kernels_for(device).event_create) has
/// completed: counted as a host synchronisation when it was not complete already.
void wait_for_event(Device device, void* event);

}  // namespace gl::device
