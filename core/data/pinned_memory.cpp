#include "data/pinned_memory.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <unordered_set>

#include "base/error.hpp"
#include "tensor/storage.hpp"

namespace gl {

namespace {

std::size_t page_size() { return static_cast<std::size_t>(sysconf(_SC_PAGESIZE)); }

/// Rounds @p bytes up to whole pages (mlock locks pages; aligned_alloc needs a multiple).
std::size_t whole_pages(std::size_t bytes) {
    const std::size_t page = page_size();
    return (bytes + page - 1) / page * page;
}

/// Which allocations were locked, so deallocate knows whether to unlock.
struct LockedSet {
    std::mutex mutex;
    std::unordered_set<void*> pointers;
};

LockedSet& locked_set() {
    static LockedSet set;
    return set;
}

}  // namespace

void* MlockPinnedProvider::allocate(std::size_t bytes) {
    if (bytes == 0) return nullptr;
    const std::size_t rounded = whole_pages(bytes);
    void* p = std::aligned_alloc(page_size(), rounded);
    if (!p) throw Error("pin_memory: out of host memory allocating " + std::to_string(bytes) + " bytes");
    if (mlock(p, rounded) == 0) {
        std::lock_guard lock(locked_set().mutex);
        locked_set().pointers.insert(p);
        locked_ += bytes;
    } else {
        fallback_ += bytes;
    }
    return p;
}

void MlockPinnedProvider::deallocate(void* ptr, std::size_t bytes) {
    if (!ptr) return;
    bool was_locked = false;
    {
        std::lock_guard lock(locked_set().mutex);
        was_locked = locked_set().pointers.erase(ptr) > 0;
    }
    if (was_locked) {
        munlock(ptr, whole_pages(bytes));
        locked_ -= bytes;
    } else {
        fallback_ -= bytes;
    }
    std::free(ptr);
}

MlockPinnedProvider& default_pinned_provider() {
    static MlockPinnedProvider provider;
    return provider;
}

Tensor copy_to_pinned(const Tensor& t, PinnedMemoryProvider& provider) {
    const Tensor source = t.contiguous();
    auto impl = std::make_shared<TensorImpl>();
    const std::size_t nbytes = static_cast<std::size_t>(source.numel()) * size_of(source.dtype());
    impl->storage = std::make_shared<Storage>(nbytes, provider);
    impl->shape = source.shape();
    impl->strides = contiguous_strides(source.shape());
    impl->dtype = source.dtype();
    if (nbytes) std::memcpy(impl->storage->data(), source.raw_data(), nbytes);
    return Tensor(impl);
}

}  // namespace gl
