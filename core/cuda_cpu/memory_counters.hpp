/// @file
/// @brief Counted memory accesses (CPU runtime): pointer and array types that report every
/// load and store, and the counters they feed (requests, 32-byte sectors, bank conflicts).
///
/// A kernel instantiated with the access policy gl::cuda::Counted (see access.hpp) gets
/// CountedPtr instead of T* for global memory and CountedArray instead of T[N] for shared
/// memory. Reading or writing through them calls detail::record_access, which hands the
/// access to the block scheduler's AccessRecorder (access_recorder.hpp). How the recorder
/// groups the accesses of 32 lanes into one warp-wide request, exactly, is explained there.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace gl::cuda::inline cpu {

/// Where an access goes: the two memories a CUDA programmer manages by hand.
enum class MemorySpace : std::uint8_t { global, shared };

/// Counts for one kind of access (say, global loads), summed over the counted launches.
struct AccessStats {
    std::uint64_t requests = 0;        ///< warp-wide instructions: 32 lanes' accesses count once
    std::uint64_t thread_accesses = 0; ///< accesses by single threads
    std::uint64_t bytes = 0;           ///< bytes the threads asked for
    std::uint64_t sectors = 0;         ///< global only: distinct 32-byte sectors each request touched
    std::uint64_t wavefronts = 0;      ///< shared only: passes the 32 banks needed to serve the requests
    std::uint64_t bank_conflicts = 0;  ///< shared only: wavefronts beyond the conflict-free minimum

    /// Average sectors per request: 4 for 32 coalesced floats, 32 for 32 scattered ones.
    double sectors_per_request() const { return requests ? double(sectors) / double(requests) : 0.0; }
    /// Average wavefronts per request: 1 without bank conflicts, up to 32.
    double wavefronts_per_request() const {
        return requests ? double(wavefronts) / double(requests) : 0.0;
    }
    AccessStats& operator+=(const AccessStats& o) {
        requests += o.requests;
        thread_accesses += o.thread_accesses;
        bytes += o.bytes;
        sectors += o.sectors;
        wavefronts += o.wavefronts;
        bank_conflicts += o.bank_conflicts;
        return *this;
    }
};

/// The four kinds of counted access.
struct MemoryCounters {
    AccessStats global_loads, global_stores, shared_loads, shared_stores;
    MemoryCounters& operator+=(const MemoryCounters& o) {
        global_loads += o.global_loads;
        global_stores += o.global_stores;
        shared_loads += o.shared_loads;
        shared_stores += o.shared_stores;
        return *this;
    }
};

/// The counts of every counted launch since the last reset.
MemoryCounters memory_counters();
/// Sets the counts to zero.
void reset_memory_counters();

namespace detail {
/// Reports one access of the running CUDA thread. Never inlined: it reads its own return
/// address, which is the address of the access in the kernel's machine code and so names
/// the instruction (see AccessRecorder). Outside a kernel it does nothing.
[[gnu::noinline]] void record_access(const void* address, unsigned size, MemorySpace space,
                                     bool store);
}  // namespace detail

template <class T, MemorySpace S>
class CountedPtr;

/// What dereferencing a CountedPtr gives: a reference that records the load when it is
/// read and the store when it is assigned (like std::vector<bool>::reference). Its members
/// are always inlined into the kernel, so that each access in the source has its own call
/// to record_access. Read it into a plain variable (`float a = A[i];`, not `auto a = A[i];`).
template <class T, MemorySpace S>
class CountedRef {
public:
    using value_type = std::remove_const_t<T>;

    explicit CountedRef(T* p) : p_(p) {}
    CountedRef(const CountedRef&) = default;

    /// A load.
    [[gnu::always_inline]] operator value_type() const {
        detail::record_access(p_, sizeof(T), S, false);
        return *p_;
    }
    /// A store.
    [[gnu::always_inline]] const CountedRef& operator=(const value_type& v) const
        requires(!std::is_const_v<T>)
    {
        detail::record_access(p_, sizeof(T), S, true);
        *p_ = v;
        return *this;
    }
    /// A load from @p other, then a store here.
    [[gnu::always_inline]] const CountedRef& operator=(const CountedRef& other) const
        requires(!std::is_const_v<T>)
    {
        return *this = static_cast<value_type>(other);
    }
    /// A load, then a store (two requests, as on the GPU).
    template <class U>
    [[gnu::always_inline]] const CountedRef& operator+=(const U& v) const {
        return *this = static_cast<value_type>(static_cast<value_type>(*this) + v);
    }
    template <class U>
    [[gnu::always_inline]] const CountedRef& operator-=(const U& v) const {
        return *this = static_cast<value_type>(static_cast<value_type>(*this) - v);
    }
    template <class U>
    [[gnu::always_inline]] const CountedRef& operator*=(const U& v) const {
        return *this = static_cast<value_type>(static_cast<value_type>(*this) * v);
    }
    /// The address, still counted (so `&A[i]` works as in CUDA code).
    CountedPtr<T, S> operator&() const { return CountedPtr<T, S>(p_); }

private:
    T* p_;
};

/// A pointer whose loads and stores are counted. Arithmetic is a plain pointer's; converts
/// from T* (so host code passes ordinary device pointers to a counted kernel).
template <class T, MemorySpace S>
class CountedPtr {
public:
    using element_type = T;

    CountedPtr() = default;
    CountedPtr(T* p) : p_(p) {}  // NOLINT: implicit, like a pointer conversion
    /// float* converts to const float*, as for raw pointers.
    template <class U>
        requires(std::is_convertible_v<U*, T*> && !std::is_same_v<U, T>)
    CountedPtr(CountedPtr<U, S> p) : p_(p.get()) {}

    /// The raw pointer (accesses through it are not counted).
    T* get() const { return p_; }

    [[gnu::always_inline]] CountedRef<T, S> operator*() const { return CountedRef<T, S>(p_); }
    [[gnu::always_inline]] CountedRef<T, S> operator[](std::ptrdiff_t i) const {
        return CountedRef<T, S>(p_ + i);
    }
    CountedPtr operator+(std::ptrdiff_t n) const { return CountedPtr(p_ + n); }
    CountedPtr operator-(std::ptrdiff_t n) const { return CountedPtr(p_ - n); }
    std::ptrdiff_t operator-(CountedPtr o) const { return p_ - o.p_; }
    CountedPtr& operator+=(std::ptrdiff_t n) { p_ += n; return *this; }
    CountedPtr& operator-=(std::ptrdiff_t n) { p_ -= n; return *this; }
    CountedPtr& operator++() { ++p_; return *this; }
    CountedPtr& operator--() { --p_; return *this; }
    friend CountedPtr operator+(std::ptrdiff_t n, CountedPtr p) { return p + n; }
    friend bool operator==(CountedPtr a, CountedPtr b) { return a.p_ == b.p_; }
    friend auto operator<=>(CountedPtr a, CountedPtr b) { return a.p_ <=> b.p_; }

private:
    T* p_ = nullptr;
};

/// A counted shared-memory array: `__shared__ CountedArray<float, 1024> tile;`.
/// 128-byte aligned, so that element 0 sits in bank 0 as on the GPU; indices are checked.
template <class T, int N>
struct alignas(128) CountedArray {
    T data[N];

    template <class I>
    [[gnu::always_inline]] CountedRef<T, MemorySpace::shared> operator[](I i) {
        check_index(static_cast<long long>(i));
        return CountedRef<T, MemorySpace::shared>(data + i);
    }
    static void check_index(long long i);
};

namespace detail {
/// Throws gl::cuda::Error naming the bad index and the array size.
[[noreturn]] void throw_shared_index(long long index, long long size);
}  // namespace detail

template <class T, int N>
void CountedArray<T, N>::check_index(long long i) {
    if (i < 0 || i >= N) detail::throw_shared_index(i, N);
}

}  // namespace gl::cuda::cpu
