// The host API of the CPU runtime: "device" memory is host memory, tracked so that the
// mistakes that crash a GPU program throw a clear error here. Copies and memsets are
// recorded on the timeline (timeline.hpp); streams and events are in streams_cpu.cpp.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <new>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "cuda_cpu/cpu_runtime.hpp"
#include "cuda_cpu/host_api.hpp"
#include "cuda_cpu/streams.hpp"
#include "cuda_cpu/timeline.hpp"

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

OpKind op_kind(CopyKind kind) {
    switch (kind) {
        case CopyKind::host_to_device: return OpKind::copy_h2d;
        case CopyKind::device_to_host: return OpKind::copy_d2h;
        case CopyKind::device_to_device: return OpKind::copy_d2d;
        case CopyKind::host_to_host: return OpKind::copy_h2h;
    }
    return OpKind::copy_h2h;
}

/// A copy with a pageable host side, done as a GPU's driver does it: through a small
/// page-locked staging buffer, chunk by chunk, so every byte is copied twice. (The device
/// can only read host memory whose pages cannot move; pageable memory is first copied
/// into such a buffer.) That double traffic is why pinned copies are faster.
void staged_copy(void* dst, const void* src, std::size_t bytes) {
    constexpr std::size_t kStagingBytes = 256 * 1024;
    thread_local std::vector<unsigned char> staging(kStagingBytes);
    auto* out = static_cast<unsigned char*>(dst);
    const auto* in = static_cast<const unsigned char*>(src);
    for (std::size_t done = 0; done < bytes; done += kStagingBytes) {
        const std::size_t n = std::min(kStagingBytes, bytes - done);
        std::memcpy(staging.data(), in + done, n);
        std::memcpy(out + done, staging.data(), n);
    }
}

/// A stream's copy under the randomized schedule: four pieces with a random pause before
/// each of the last three, as a DMA engine reads its source over time. A kernel that writes
/// the source (or reads the destination) without waiting for the copy then meets it half done.
void copy_in_pieces_with_pauses(void* dst, const void* src, std::size_t bytes) {
    const StreamSchedule schedule = stream_schedule();
    thread_local std::mt19937_64 pauses(schedule.seed ^ static_cast<std::uint64_t>(current_stream()));
    const std::size_t piece = (bytes + 3) / 4;
    auto* out = static_cast<unsigned char*>(dst);
    const auto* in = static_cast<const unsigned char*>(src);
    for (std::size_t done = 0; done < bytes; done += piece) {
        if (done > 0) {
            const int us = std::uniform_int_distribution<int>(0, schedule.max_delay_us / 2)(pauses);
            std::this_thread::sleep_for(std::chrono::microseconds(us));
        }
        std::memcpy(out + done, in + done, std::min(piece, bytes - done));
    }
}

/// With a modeled link (set_link_bandwidth), sleeps until a copy of @p bytes begun at
/// @p start_ns has taken bytes / bandwidth.
void wait_for_link(std::int64_t start_ns, std::size_t bytes) {
    const double gbs = link_bandwidth();
    if (gbs <= 0) return;
    const auto link_ns = static_cast<std::int64_t>(static_cast<double>(bytes) / gbs);  // bytes / (GB/s) = ns
    const std::int64_t left = start_ns + link_ns - detail::now_ns();
    if (left > 0) std::this_thread::sleep_for(std::chrono::nanoseconds(left));
}

}  // namespace

void* malloc(std::size_t bytes) {
    if (bytes == 0) return nullptr;
    void* p = ::operator new(bytes, std::align_val_t{kAlignment}, std::nothrow);
    if (!p)
        throw Error(ErrorCode::memory_allocation,
                    "malloc: cannot allocate " + std::to_string(bytes) + " bytes");
    // Under the randomized stream schedule, fresh memory reads as NaN (as float), so a
    // kernel that reads a buffer before its copy arrived computes NaN, not leftovers.
    if (stream_schedule().randomized) std::memset(p, 0xFF, bytes);
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

namespace detail {

void check_copy(void* dst, const void* src, std::size_t bytes, CopyKind kind) {
    if (!dst || !src) throw Error(ErrorCode::invalid_value, "memcpy: null pointer");
    if (kind == CopyKind::host_to_device || kind == CopyKind::device_to_device)
        check_device_range(dst, bytes, "memcpy destination");
    if (kind == CopyKind::device_to_host || kind == CopyKind::device_to_device)
        check_device_range(src, bytes, "memcpy source");
}

void copy_now(void* dst, const void* src, std::size_t bytes, CopyKind kind) {
    const std::int64_t start_ns = now_ns();
    const void* host_side = kind == CopyKind::host_to_device   ? src
                            : kind == CopyKind::device_to_host ? dst
                                                               : nullptr;
    const bool pageable = host_side && !is_page_locked(host_side, bytes);
    if (pageable)
        staged_copy(dst, src, bytes);
    else if (stream_schedule().randomized && current_stream() != 0)
        copy_in_pieces_with_pauses(dst, src, bytes);
    else
        std::memcpy(dst, src, bytes);
    if (host_side) wait_for_link(start_ns, bytes);
    TimelineEntry entry;
    entry.kind = op_kind(kind);
    entry.stream = current_stream();
    entry.bytes = bytes;
    entry.src = src;
    entry.dst = dst;
    entry.pageable = pageable;
    record_op(entry, start_ns);
}

}  // namespace detail

void memcpy(void* dst, const void* src, std::size_t bytes, CopyKind kind) {
    if (bytes == 0) return;
    detail::check_copy(dst, src, bytes, kind);
    detail::copy_now(dst, src, bytes, kind);
}

void memset(void* device_ptr, int value, std::size_t bytes) {
    if (bytes == 0) return;
    check_device_range(device_ptr, bytes, "memset");
    const std::int64_t start_ns = detail::now_ns();
    std::memset(device_ptr, value, bytes);
    TimelineEntry entry;
    entry.kind = OpKind::memset;
    entry.stream = current_stream();
    entry.bytes = bytes;
    entry.dst = device_ptr;
    detail::record_op(entry, start_ns);
}

std::string device_name() {
    return "CPU runtime (" + std::to_string(workers()) + " worker threads)";
}

}  // namespace gl::cuda::cpu
