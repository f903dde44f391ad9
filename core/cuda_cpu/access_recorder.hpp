/// @file
/// @brief Groups the counted accesses of a block into warp-wide requests and counts
/// sectors and bank conflicts (CPU runtime internals).
///
/// On a GPU the 32 lanes of a warp execute one load instruction together, and the memory
/// system serves the 32 addresses as one request: global memory in 32-byte sectors (32
/// consecutive floats touch 4 sectors, 32 floats a row apart touch 32), shared memory from
/// 32 banks of 4-byte words (two lanes that want different words of one bank are served one
/// after the other: a bank conflict). The CPU runtime runs the lanes one after another, so
/// it has to find out afterwards which accesses belonged to the same instruction.
///
/// How it is exact. Every counted access reports its *site*: the return address of
/// record_access, which is the address of the call in the kernel's machine code, one per
/// load or store in the source (the CountedRef members that call it are always inlined).
/// A lane's n-th access at a site since the warp's last synchronisation point is the
/// site's n-th execution by that lane; lanes that execute the same instruction sequence
/// (what SIMT hardware runs together) meet in the same (site, n) key, so the group
/// (warp, site, n) is the warp-wide request. Lanes that a branch switched off simply do not
/// contribute, as on the hardware. The groups are closed, and counted, when all lanes of
/// the warp stop at the same point: a __syncthreads, a full-warp warp operation, or the end
/// of the block; then the occurrence numbers restart. This matches the hardware for every
/// kernel whose lanes do not reach one site a different number of times along different
/// paths between two synchronisation points (divergent loops that rejoin are fine; that
/// case would need an instruction-by-instruction lockstep simulation).
#pragma once

#include <array>
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "cuda_cpu/memory_counters.hpp"

namespace gl::cuda::inline cpu::detail {

/// The counting model. Global: a request costs the distinct 32-byte sectors its lanes touch.
/// Shared: 32 banks of 4-byte words; lanes reading the same word share it (broadcast);
/// wavefronts = the most distinct words any one bank must deliver. Accesses wider than 4
/// bytes are served in phases of 128 bytes (8-byte: two half-warps, 16-byte: four
/// quarter-warps), each phase counted the same way.
class AccessRecorder {
public:
    /// Forgets everything of the previous block; the block has @p threads threads.
    void begin_block(int threads);
    /// One access by thread @p thread (linear index in the block).
    void record(int thread, const void* site, std::uintptr_t address, unsigned size,
                MemorySpace space, bool store);
    /// Every lane of warp @p warp is at the same point: its open requests are complete.
    void close_warp(int warp);
    /// Closes every warp (a __syncthreads, or the end of the block).
    void close_all();
    /// The counts of the closed requests since begin_block.
    const MemoryCounters& counts() const { return counts_; }
    /// Whether anything was recorded in this block.
    bool active() const { return active_; }

private:
    struct Key {
        const void* site;
        std::uint32_t occurrence;
        bool operator==(const Key&) const = default;
    };
    struct KeyHash {
        std::size_t operator()(const Key& k) const {
            return std::hash<const void*>()(k.site) * 31u + k.occurrence;
        }
    };
    struct Request {
        MemorySpace space;
        bool store;
        unsigned size;
        std::vector<std::pair<int, std::uintptr_t>> lanes;  // (lane, address)
    };
    struct Warp {
        std::unordered_map<Key, Request, KeyHash> open;
        std::array<std::unordered_map<const void*, std::uint32_t>, 32> seen;  // per lane, per site
    };
    void count(const Request& r);

    std::vector<Warp> warps_;
    int threads_ = 0;
    MemoryCounters counts_;
    bool active_ = false;
};

/// Distinct 32-byte sectors touched by the lanes of a global request.
std::uint64_t sectors_touched(const std::vector<std::pair<int, std::uintptr_t>>& lanes,
                              unsigned size);
/// Wavefronts needed to serve a shared-memory request, and the phases it is split into.
struct Wavefronts {
    std::uint64_t wavefronts = 0;  ///< cycles the banks need: the most distinct words one bank delivers, summed over phases
    std::uint64_t phases = 0;      ///< 1 for 4-byte accesses; 8- and 16-byte accesses are served 128 bytes at a time
};
/// Bank arithmetic of one shared-memory request of @p size -byte accesses: 32 banks of 4
/// bytes; lanes reading the same word are served by one broadcast; what one bank must
/// deliver in distinct words is how many wavefronts the request takes.
Wavefronts shared_wavefronts(const std::vector<std::pair<int, std::uintptr_t>>& lanes,
                             unsigned size);

}  // namespace gl::cuda::cpu::detail
