#include "memory/tracking_allocator.hpp"

#include <algorithm>
#include <cstdio>
#include <string>

#include "profiler/profiler.hpp"
#include "tensor/tensor.hpp"

namespace gl::memory {

TrackingAllocator::TrackingAllocator(Allocator& backing) : backing_(backing) {}

TrackingAllocator::~TrackingAllocator() {
    // A destructor must not throw; report the bug loudly instead of freeing into a dead
    // allocator later (the blocks leak, which is the lesser evil).
    if (!blocks_.empty())
        std::fprintf(stderr, "gradlab: TrackingAllocator destroyed while %zu tensor allocation(s) "
                             "from it are alive; keep the allocator alive longer than its tensors\n",
                     blocks_.size());
}

void TrackingAllocator::add(MemoryCategory c, std::size_t bytes) {
    const auto i = static_cast<std::size_t>(c);
    stats_.current[i] += bytes;
    stats_.peak[i] = std::max(stats_.peak[i], stats_.current[i]);
    stats_.total_current += bytes;
    stats_.total_peak = std::max(stats_.total_peak, stats_.total_current);
    if (prof::recording()) prof::memory_sample(name_of(c), static_cast<std::int64_t>(stats_.current[i]));
}

void TrackingAllocator::remove(MemoryCategory c, std::size_t bytes) {
    stats_.current[static_cast<std::size_t>(c)] -= bytes;
    stats_.total_current -= bytes;
    if (prof::recording())
        prof::memory_sample(name_of(c), static_cast<std::int64_t>(stats_.current[static_cast<std::size_t>(c)]));
}

void* TrackingAllocator::allocate(std::size_t bytes) {
    void* p = backing_.allocate(bytes);
    if (!p) return p;  // a 0-byte request holds nothing
    const MemoryCategory c = current_memory_category();
    std::lock_guard lock(mutex_);
    blocks_[p] = {bytes, c};
    ++stats_.allocations;
    add(c, bytes);
    return p;
}

void TrackingAllocator::deallocate(void* ptr, std::size_t bytes) {
    if (ptr) {
        std::lock_guard lock(mutex_);
        const auto it = blocks_.find(ptr);
        if (it != blocks_.end()) {
            remove(it->second.category, it->second.bytes);
            blocks_.erase(it);
            ++stats_.deallocations;
        }
    }
    backing_.deallocate(ptr, bytes);
}

void TrackingAllocator::set_category(void* ptr, MemoryCategory to) {
    std::lock_guard lock(mutex_);
    const auto it = blocks_.find(ptr);
    if (it == blocks_.end() || it->second.category == to) return;
    remove(it->second.category, it->second.bytes);
    it->second.category = to;
    add(to, it->second.bytes);
}

void TrackingAllocator::set_category_if(void* ptr, MemoryCategory from, MemoryCategory to) {
    std::lock_guard lock(mutex_);
    const auto it = blocks_.find(ptr);
    if (it == blocks_.end() || it->second.category != from || from == to) return;
    remove(from, it->second.bytes);
    it->second.category = to;
    add(to, it->second.bytes);
}

MemoryStats TrackingAllocator::stats() const {
    std::lock_guard lock(mutex_);
    return stats_;
}

void TrackingAllocator::reset_peaks() {
    std::lock_guard lock(mutex_);
    stats_.peak = stats_.current;
    stats_.total_peak = stats_.total_current;
    stats_.allocations = 0;
    stats_.deallocations = 0;
}

namespace {

// The tracker that owns @p t's bytes, or null when they came from another allocator.
TrackingAllocator* tracker_of(const Tensor& t) {
    if (!t.defined() || !t.storage() || !t.storage()->data()) return nullptr;
    return dynamic_cast<TrackingAllocator*>(&t.storage()->allocator());
}

}  // namespace

void tag_memory(const Tensor& t, MemoryCategory category) {
    if (TrackingAllocator* tracker = tracker_of(t)) tracker->set_category(t.storage()->data(), category);
}

void tag_memory_if(const Tensor& t, MemoryCategory from, MemoryCategory to) {
    if (TrackingAllocator* tracker = tracker_of(t)) tracker->set_category_if(t.storage()->data(), from, to);
}

DefaultAllocatorScope::DefaultAllocatorScope(Allocator& allocator) : previous_(&default_cpu_allocator()) {
    set_default_cpu_allocator(&allocator);
}

DefaultAllocatorScope::~DefaultAllocatorScope() {
    set_default_cpu_allocator(previous_ == &cpu_allocator() ? nullptr : previous_);
}

}  // namespace gl::memory
