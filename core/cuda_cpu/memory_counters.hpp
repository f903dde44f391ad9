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
    /// Adds @p o's counts (to sum the counters of several launches or blocks).
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
    AccessStats global_loads;   ///< reads of global memory (sectors show coalescing)
    AccessStats global_stores;  ///< writes to global memory
    AccessStats shared_loads;   ///< reads of shared memory (wavefronts show bank conflicts)
    AccessStats shared_stores;  ///< writes to shared memory
    /// Adds @p o's counts, kind by kind.
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
    using value_type = std::remove_const_t<T>;  ///< what a load gives

    /// Refers to the element at @p p; nothing is counted until it is read or assigned.
    explicit CountedRef(T* p) : p_(p) {}
    /// Copies the reference, not the element (no access).
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
    /// A load, then a store (two requests, as on the GPU).
    template <class U>
    [[gnu::always_inline]] const CountedRef& operator-=(const U& v) const {
        return *this = static_cast<value_type>(static_cast<value_type>(*this) - v);
    }
    /// A load, then a store (two requests, as on the GPU).
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
    using element_type = T;  ///< the pointee, as for std::pointer_traits

    /// A null pointer.
    CountedPtr() = default;
    /// Wraps a raw device pointer; implicit, so host code passes `float*` to a counted kernel.
    CountedPtr(T* p) : p_(p) {}  // NOLINT: implicit, like a pointer conversion
    /// float* converts to const float*, as for raw pointers.
    template <class U>
        requires(std::is_convertible_v<U*, T*> && !std::is_same_v<U, T>)
    CountedPtr(CountedPtr<U, S> p) : p_(p.get()) {}

    /// The raw pointer (accesses through it are not counted).
    T* get() const { return p_; }

    /// The element it points to, as a counted reference (counted when read or assigned).
    [[gnu::always_inline]] CountedRef<T, S> operator*() const { return CountedRef<T, S>(p_); }
    /// Element @p i, as a counted reference: `A[row * K + k]` in a kernel.
    [[gnu::always_inline]] CountedRef<T, S> operator[](std::ptrdiff_t i) const {
        return CountedRef<T, S>(p_ + i);
    }
    /// @p n elements further on (no access, so nothing is counted).
    CountedPtr operator+(std::ptrdiff_t n) const { return CountedPtr(p_ + n); }
    /// @p n elements back (no access).
    CountedPtr operator-(std::ptrdiff_t n) const { return CountedPtr(p_ - n); }
    /// Elements between two pointers.
    std::ptrdiff_t operator-(CountedPtr o) const { return p_ - o.p_; }
    /// Advances by @p n elements: `A += BLOCKSIZE` moves a tile pointer along.
    CountedPtr& operator+=(std::ptrdiff_t n) { p_ += n; return *this; }
    /// Moves back by @p n elements.
    CountedPtr& operator-=(std::ptrdiff_t n) { p_ -= n; return *this; }
    /// Next element.
    CountedPtr& operator++() { ++p_; return *this; }
    /// Previous element.
    CountedPtr& operator--() { --p_; return *this; }
    /// `n + p`, as for raw pointers.
    friend CountedPtr operator+(std::ptrdiff_t n, CountedPtr p) { return p + n; }
    /// Same address.
    friend bool operator==(CountedPtr a, CountedPtr b) { return a.p_ == b.p_; }
    /// Orders by address, as raw pointers into one array.
    friend auto operator<=>(CountedPtr a, CountedPtr b) { return a.p_ <=> b.p_; }

private:
    T* p_ = nullptr;
};

/// A counted shared-memory array: `__shared__ CountedArray<float, 1024> tile;`.
/// 128-byte aligned, so that element 0 sits in bank 0 as on the GPU; indices are checked.
template <class T, int N>
struct alignas(128) CountedArray {
    T data[N];  ///< the elements (accesses through `data` directly are not counted)

    /// Element @p i as a counted reference; an index outside [0, N) throws gl::cuda::Error.
    template <class I>
    [[gnu::always_inline]] CountedRef<T, MemorySpace::shared> operator[](I i) {
        check_index(static_cast<long long>(i));
        return CountedRef<T, MemorySpace::shared>(data + i);
    }
    /// Throws gl::cuda::Error naming @p i and N unless 0 <= i < N.
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
