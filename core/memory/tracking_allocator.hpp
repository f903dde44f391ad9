/// @file
/// @brief An allocator that counts the bytes every tensor holds, by what they are for.
///
/// Owns: current and peak bytes per MemoryCategory, resettable per training step. It
/// forwards every request to a backing allocator (direct or caching), so it measures
/// what tensors hold, not what the backing allocator reserved. Knows nothing about
/// autograd: other layers label bytes through memory_category.hpp and tag_memory().
///
/// Typical use (what `gradlab train --memory` does):
///
///     gl::memory::TrackingAllocator tracker;               // over gl::cpu_allocator()
///     gl::memory::DefaultAllocatorScope use(tracker);      // new tensors come from it
///     ... build the model and optimizer, then each step:
///     tracker.reset_peaks();  step();  auto stats = tracker.stats();
#pragma once

#include <array>
#include <cstddef>
#include <mutex>
#include <unordered_map>

#include "memory/memory_category.hpp"
#include "tensor/allocator.hpp"

namespace gl {
class Tensor;
}

namespace gl::memory {

/// A snapshot of what a TrackingAllocator counted.
struct MemoryStats {
    /// Bytes held now, per category (indexed by MemoryCategory).
    std::array<std::size_t, kMemoryCategoryCount> current{};
    /// The most bytes each category held at once since the last reset. Each category's
    /// peak is its own: they need not have happened at the same moment.
    std::array<std::size_t, kMemoryCategoryCount> peak{};
    std::size_t total_current = 0;  ///< bytes held now, all categories
    std::size_t total_peak = 0;     ///< the most bytes held at once since the last reset
    std::size_t allocations = 0;    ///< allocate() calls since the last reset
    std::size_t deallocations = 0;  ///< deallocate() calls since the last reset

    /// Bytes held now in @p c.
    std::size_t current_of(MemoryCategory c) const { return current[static_cast<std::size_t>(c)]; }
    /// Peak bytes of @p c since the last reset.
    std::size_t peak_of(MemoryCategory c) const { return peak[static_cast<std::size_t>(c)]; }
};

/// Counts every allocation under the allocating thread's current MemoryCategory and
/// remembers each block's category, so it can be relabelled later (set_category) and
/// subtracted from the right count when freed. Thread-safe.
class TrackingAllocator final : public Allocator {
public:
    /// Tracks requests forwarded to @p backing (which must outlive this allocator).
    explicit TrackingAllocator(Allocator& backing = cpu_allocator());
    /// Throws if tensors from this allocator are still alive: they would free into a
    /// dead allocator.
    ~TrackingAllocator() override;

    void* allocate(std::size_t bytes) override;
    void deallocate(void* ptr, std::size_t bytes) override;
    const char* name() const override { return "tracking"; }

    /// Relabels the block at @p ptr (from this allocator) as @p to; its bytes move from
    /// its old category's count to the new one. Unknown pointers are ignored.
    void set_category(void* ptr, MemoryCategory to);
    /// Relabels the block at @p ptr as @p to only if it is currently @p from.
    void set_category_if(void* ptr, MemoryCategory from, MemoryCategory to);

    /// A consistent snapshot of the counters.
    MemoryStats stats() const;
    /// Starts a new measurement window (one training step): peaks become the current
    /// values and the call counts restart from zero.
    void reset_peaks();

    /// The allocator requests are forwarded to.
    Allocator& backing() const { return backing_; }

private:
    struct Block {
        std::size_t bytes;
        MemoryCategory category;
    };
    void add(MemoryCategory c, std::size_t bytes);     // callers hold mutex_
    void remove(MemoryCategory c, std::size_t bytes);  // callers hold mutex_

    Allocator& backing_;
    mutable std::mutex mutex_;
    std::unordered_map<void*, Block> blocks_;
    MemoryStats stats_;
};

/// Relabels the bytes of @p t as @p category when they came from a TrackingAllocator;
/// does nothing otherwise (so untracked runs pay one pointer check).
void tag_memory(const Tensor& t, MemoryCategory category);
/// Relabels the bytes of @p t as @p to only if they are currently @p from (used for
/// saved activations: a saved weight stays a parameter).
void tag_memory_if(const Tensor& t, MemoryCategory from, MemoryCategory to);

/// Makes @p allocator the default for new CPU tensors for its lifetime, then restores
/// the previous default (RAII).
class DefaultAllocatorScope {
public:
    /// Installs @p allocator as gl::default_cpu_allocator().
    explicit DefaultAllocatorScope(Allocator& allocator);
    ~DefaultAllocatorScope();
    DefaultAllocatorScope(const DefaultAllocatorScope&) = delete;
    DefaultAllocatorScope& operator=(const DefaultAllocatorScope&) = delete;

private:
    Allocator* previous_;
};

}  // namespace gl::memory
