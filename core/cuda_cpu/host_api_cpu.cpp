// The host API of the CPU runtime: "device" memory is host memory, tracked so that the
// mistakes that crash a GPU program throw a clear error here.
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <new>
#include <string>

#include "cuda_cpu/cpu_runtime.hpp"
#include "cuda_cpu/host_api.hpp"

namespace gl::cuda::inline cpu {
namespace {

constexpr std::size_t kAlignment = 256;  // what cudaMalloc guarantees

/// The live allocations: start address -> size.
struct Allocations {
    std::mutex mutex;
    std::map<std::uintptr_t, std::size_t> live;
};

Allocations& allocations() {
    static Allocations a;
    return a;
}

std::string hex(const void* p) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%p", p);
    return buf;
}

/// Throws unless [p, p + bytes) lies inside one live allocation.
void check_device_range(const void* p, std::size_t bytes, const char* what) {
    const auto addr = reinterpret_cast<std::uintptr_t>(p);
    Allocations& a = allocations();
    std::lock_guard lock(a.mutex);
    auto it = a.live.upper_bound(addr);
    if (it != a.live.begin()) {
        --it;
        if (addr >= it->first && addr + bytes <= it->first + it->second) return;
        if (addr >= it->first && addr < it->first + it->second)
            throw Error(ErrorCode::invalid_value,
                        std::string(what) + ": " + std::to_string(bytes) + " bytes from " + hex(p) +
                            " run past the end of its allocation of " +
                            std::to_string(it->second) + " bytes");
    }
    throw Error(ErrorCode::invalid_device_pointer,
                std::string(what) + ": " + hex(p) +
                    " is not device memory (it was not returned by gl::cuda::malloc, or it was "
                    "freed); a GPU would fault here. Check the copy kind and the argument order "
                    "(dst, src, bytes, kind)");
}

}  // namespace

void* malloc(std::size_t bytes) {
    if (bytes == 0) return nullptr;
    void* p = ::operator new(bytes, std::align_val_t{kAlignment}, std::nothrow);
    if (!p)
        throw Error(ErrorCode::memory_allocation,
                    "malloc: cannot allocate " + std::to_string(bytes) + " bytes");
    Allocations& a = allocations();
    std::lock_guard lock(a.mutex);
    a.live[reinterpret_cast<std::uintptr_t>(p)] = bytes;
    return p;
}

void free(void* device_ptr) {
    if (!device_ptr) return;
    {
        Allocations& a = allocations();
        std::lock_guard lock(a.mutex);
        if (a.live.erase(reinterpret_cast<std::uintptr_t>(device_ptr)) == 0)
            throw Error(ErrorCode::invalid_device_pointer,
                        "free: " + hex(device_ptr) +
                            " was not returned by gl::cuda::malloc, or was freed already");
    }
    ::operator delete(device_ptr, std::align_val_t{kAlignment});
}

void memcpy(void* dst, const void* src, std::size_t bytes, CopyKind kind) {
    if (bytes == 0) return;
    if (!dst || !src) throw Error(ErrorCode::invalid_value, "memcpy: null pointer");
    if (kind == CopyKind::host_to_device || kind == CopyKind::device_to_device)
        check_device_range(dst, bytes, "memcpy destination");
    if (kind == CopyKind::device_to_host || kind == CopyKind::device_to_device)
        check_device_range(src, bytes, "memcpy source");
    std::memcpy(dst, src, bytes);
}

void memset(void* device_ptr, int value, std::size_t bytes) {
    if (bytes == 0) return;
    check_device_range(device_ptr, bytes, "memset");
    std::memset(device_ptr, value, bytes);
}

void synchronize() {}

std::string device_name() {
    return "CPU runtime (" + std::to_string(workers()) + " worker threads)";
}

void Event::record() {
    time_ = std::chrono::steady_clock::now();
    recorded_ = true;
}

float Event::elapsed_ms(const Event& start, const Event& stop) {
    if (!start.recorded_ || !stop.recorded_)
        throw Error(ErrorCode::invalid_value, "Event::elapsed_ms: record both events first");
    return std::chrono::duration<float, std::milli>(stop.time_ - start.time_).count();
}

}  // namespace gl::cuda::cpu
