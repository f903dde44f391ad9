/// @file
/// @brief Access policies: how a kernel reaches global and shared memory. gl::cuda::Direct
/// (raw pointers and arrays: what nvcc compiles, and the fast CPU path) and, on the CPU
/// runtime only, gl::cuda::Counted (every access counted, see memory_counters.hpp).
///
/// A kernel that wants to be counted takes the policy as a template parameter and spells its
/// memory with the aliases below:
///
///     template <class Access = gl::cuda::Direct>
///     __global__ void copy(int n, gl::cuda::global_ptr<Access, const float> in,
///                          gl::cuda::global_ptr<Access, float> out) {
///         __shared__ gl::cuda::shared_array<Access, float, 256> tile;
///         ...
///
/// Under nvcc global_ptr<Direct, T> is T* and shared_array<Direct, T, N> is T[N]: the GPU
/// code is exactly what one would write by hand. Direct is declared in an inline namespace
/// named after the runtime (gl::cuda::gpu or gl::cuda::cpu), so one kernel template compiled
/// by nvcc and by g++ gives two distinct symbols that can live in one program.
///
/// Only cuda_compat.hpp includes this file.
#pragma once

#include <type_traits>

namespace gl::cuda {

#if defined(__CUDACC__)

inline namespace gpu {
/// Raw memory: T* for global memory, T[N] for shared arrays.
struct Direct {
    template <class T>
    using global = T*;
    template <class T, int N>
    using shared = T[N];
    template <class T>
    using shared_ptr = T*;
};
}  // namespace gpu

/// The block's dynamic shared memory (the third launch parameter), as an array of T.
template <class T, class Access = Direct>
__device__ inline T* dynamic_shared() {
    extern __shared__ __align__(16) unsigned char gl_dynamic_shared_memory[];
    return reinterpret_cast<T*>(gl_dynamic_shared_memory);
}

/// The same address seen as a V (e.g. float4 for 16-byte loads); keeps const.
template <class V, class T>
__host__ __device__ inline auto reinterpret_ptr(T* p) {
    using Out = std::conditional_t<std::is_const_v<T>, const V, V>;
    return reinterpret_cast<Out*>(p);
}

#else  // the CPU runtime

}  // namespace gl::cuda
#include "cuda_cpu/memory_counters.hpp"
namespace gl::cuda {

inline namespace cpu {

namespace detail {
/// Shared arrays of the Direct policy in debug builds: a T[N] whose indices are checked
/// (an out-of-bounds index throws gl::cuda::Error from the kernel thread). Trivial, so a
/// `static thread_local` instance costs nothing to set up.
template <class T, int N>
struct alignas(16) CheckedArray {
    T data[N];
    template <class I>
    T& operator[](I i) {
        if (static_cast<long long>(i) < 0 || static_cast<long long>(i) >= N)
            throw_shared_index(static_cast<long long>(i), N);
        return data[i];
    }
};
#if defined(NDEBUG)
template <class T, int N>
using DirectShared = T[N];
#else
template <class T, int N>
using DirectShared = CheckedArray<T, N>;
#endif
}  // namespace detail

/// Raw memory: T* for global memory; T[N] for shared arrays (index-checked in debug builds).
struct Direct {
    /// A pointer to global memory: a plain T*.
    template <class T>
    using global = T*;
    /// A `__shared__` array of N elements: T[N] (index-checked in debug builds).
    template <class T, int N>
    using shared = detail::DirectShared<T, N>;
    /// A pointer into shared memory (dynamic shared memory): a plain T*.
    template <class T>
    using shared_ptr = T*;
};

/// Counted memory: every load and store is reported to the memory counters.
struct Counted {
    /// A pointer to global memory whose every access is counted in sectors and requests.
    template <class T>
    using global = CountedPtr<T, MemorySpace::global>;
    /// A `__shared__` array whose accesses are counted in banks and wavefronts (always index-checked).
    template <class T, int N>
    using shared = CountedArray<T, N>;
    /// A pointer into shared memory whose accesses are counted like the shared arrays'.
    template <class T>
    using shared_ptr = CountedPtr<T, MemorySpace::shared>;
};

namespace detail {
/// The dynamic shared memory of the block the calling OS thread runs.
void* dynamic_shared_base();
}  // namespace detail

}  // namespace cpu

/// The block's dynamic shared memory (the shared_bytes launch parameter), as an array of T.
/// CUDA spells this `extern __shared__ T name[];`, which has no C++ equivalent; this
/// function is the portable spelling (under nvcc it is exactly that declaration).
template <class T, class Access = Direct>
typename Access::template shared_ptr<T> dynamic_shared() {
    return typename Access::template shared_ptr<T>(static_cast<T*>(cpu::detail::dynamic_shared_base()));
}

/// The same address seen as a V (e.g. float4 for 16-byte loads); keeps const.
template <class V, class T>
inline auto reinterpret_ptr(T* p) {
    using Out = std::conditional_t<std::is_const_v<T>, const V, V>;
    return reinterpret_cast<Out*>(p);
}
/// The counted version: still counted, now in units of V.
template <class V, class T, cpu::MemorySpace S>
inline auto reinterpret_ptr(cpu::CountedPtr<T, S> p) {
    using Out = std::conditional_t<std::is_const_v<T>, const V, V>;
    return cpu::CountedPtr<Out, S>(reinterpret_cast<Out*>(p.get()));
}

#endif

/// Global memory of element type T under access policy @p Access.
template <class Access, class T>
using global_ptr = typename Access::template global<T>;

/// A __shared__ array of N elements of type T under access policy @p Access.
template <class Access, class T, int N>
using shared_array = typename Access::template shared<T, N>;

}  // namespace gl::cuda
