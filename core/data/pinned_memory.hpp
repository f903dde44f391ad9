/// @file
/// @brief Page-locked (pinned) host memory for batches: what `pin_memory` asks for.
///
/// Owns: the interface a data loader copies pinned batches through, and a default
/// provider that locks pages with mlock. A copy engine (a GPU's DMA, or the CUDA-on-CPU
/// runtime's analogue) can read locked pages directly, while pageable memory must first
/// be staged through a locked bounce buffer: that extra copy is what pinning saves
/// (claim DATA-3). A device runtime with its own pinned allocator (cudaHostAlloc)
/// implements PinnedMemoryProvider and is handed to the loader instead. Knows nothing
/// about devices.
#pragma once

#include <atomic>
#include <cstddef>

#include "tensor/allocator.hpp"
#include "tensor/tensor.hpp"

namespace gl {

/// Gives page-locked host memory; an Allocator, so tensors can live in it.
class PinnedMemoryProvider : public Allocator {
public:
    /// Bytes handed out that are really locked in RAM now.
    virtual std::size_t locked_bytes() const = 0;
    /// Bytes handed out unlocked because the OS refused (RLIMIT_MEMLOCK), still usable.
    virtual std::size_t unlocked_fallback_bytes() const = 0;
};

/// Pins with mlock(2). When the OS refuses (the locked-memory limit, `ulimit -l`, is
/// small by default), the memory is handed out anyway, unlocked, and counted in
/// unlocked_fallback_bytes(): a batch is never lost for want of pinning.
class MlockPinnedProvider : public PinnedMemoryProvider {
public:
    /// Page-aligned memory, locked if the OS allows it.
    void* allocate(std::size_t bytes) override;
    /// Unlocks (if locked) and frees.
    void deallocate(void* ptr, std::size_t bytes) override;
    /// "mlock-pinned".
    const char* name() const override { return "mlock-pinned"; }
    /// Bytes locked now.
    std::size_t locked_bytes() const override { return locked_.load(); }
    /// Bytes handed out unlocked now.
    std::size_t unlocked_fallback_bytes() const override { return fallback_.load(); }

private:
    std::atomic<std::size_t> locked_{0};
    std::atomic<std::size_t> fallback_{0};
};

/// The process-wide mlock provider the data loader uses unless given another.
MlockPinnedProvider& default_pinned_provider();

/// A contiguous copy of @p t whose storage comes from @p provider (a pinned batch).
Tensor copy_to_pinned(const Tensor& t, PinnedMemoryProvider& provider);

}  // namespace gl
