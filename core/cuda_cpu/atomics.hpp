/// @file
/// @brief CUDA atomics and a few bit intrinsics on the CPU runtime.
///
/// Blocks run on several OS threads at once, so atomics must be real atomics: each one is a
/// std::atomic_ref operation (relaxed order, like CUDA's atomics; __threadfence is the
/// fence). Only the overloads CUDA has are here, so a kernel that compiles on the CPU also
/// compiles with nvcc: there is no atomicMax on float, for instance; build it from
/// atomicCAS on the float's bits (tests/cuda_cpu/test_runtime.cpp shows how).
#pragma once

#include <atomic>
#include <bit>
#include <concepts>
#include <cstdint>

#include "cuda_cpu/memory_counters.hpp"

namespace gl::cuda::inline cpu::detail {

template <class T, class... Allowed>
concept OneOf = (std::same_as<T, Allowed> || ...);

template <class T>
concept AtomicInt = OneOf<T, int, unsigned int, unsigned long long>;
template <class T>
concept AtomicAddable = OneOf<T, int, unsigned int, unsigned long long, float, double>;
template <class T>
concept AtomicMinMax = OneOf<T, int, unsigned int, long long, unsigned long long>;

/// The atomic view of the word at @p address that every atomic below operates on.
template <class T>
std::atomic_ref<T> at(T* address) {
    return std::atomic_ref<T>(*address);
}

}  // namespace gl::cuda::cpu::detail

/// *address += val; returns the old value.
template <gl::cuda::cpu::detail::AtomicAddable T>
T atomicAdd(T* address, T val) {
    return gl::cuda::cpu::detail::at(address).fetch_add(val, std::memory_order_relaxed);
}
/// *address -= val; returns the old value.
template <gl::cuda::cpu::detail::OneOf<int, unsigned int> T>
T atomicSub(T* address, T val) {
    return gl::cuda::cpu::detail::at(address).fetch_sub(val, std::memory_order_relaxed);
}
/// *address = val; returns the old value.
template <gl::cuda::cpu::detail::OneOf<int, unsigned int, unsigned long long, float> T>
T atomicExch(T* address, T val) {
    return gl::cuda::cpu::detail::at(address).exchange(val, std::memory_order_relaxed);
}
/// If *address == compare, *address = val; returns the old value either way.
template <gl::cuda::cpu::detail::AtomicInt T>
T atomicCAS(T* address, T compare, T val) {
    gl::cuda::cpu::detail::at(address).compare_exchange_strong(compare, val,
                                                               std::memory_order_relaxed);
    return compare;  // compare_exchange wrote the old value into compare
}
/// *address = max(*address, val); returns the old value.
template <gl::cuda::cpu::detail::AtomicMinMax T>
T atomicMax(T* address, T val) {
    auto a = gl::cuda::cpu::detail::at(address);
    T old = a.load(std::memory_order_relaxed);
    while (old < val && !a.compare_exchange_weak(old, val, std::memory_order_relaxed)) {
    }
    return old;
}
/// *address = min(*address, val); returns the old value.
template <gl::cuda::cpu::detail::AtomicMinMax T>
T atomicMin(T* address, T val) {
    auto a = gl::cuda::cpu::detail::at(address);
    T old = a.load(std::memory_order_relaxed);
    while (val < old && !a.compare_exchange_weak(old, val, std::memory_order_relaxed)) {
    }
    return old;
}
/// *address &= val; returns the old value.
template <gl::cuda::cpu::detail::AtomicInt T>
T atomicAnd(T* address, T val) {
    return gl::cuda::cpu::detail::at(address).fetch_and(val, std::memory_order_relaxed);
}
/// *address |= val; returns the old value.
template <gl::cuda::cpu::detail::AtomicInt T>
T atomicOr(T* address, T val) {
    return gl::cuda::cpu::detail::at(address).fetch_or(val, std::memory_order_relaxed);
}
/// *address ^= val; returns the old value.
template <gl::cuda::cpu::detail::AtomicInt T>
T atomicXor(T* address, T val) {
    return gl::cuda::cpu::detail::at(address).fetch_xor(val, std::memory_order_relaxed);
}

// Atomics on counted pointers (`atomicAdd(&sum[i], x)` in a counted kernel) act on the raw
// address; atomics are not part of the memory counters.

/// atomicAdd through a counted pointer (same result; not counted as a load or store).
template <class T, gl::cuda::cpu::MemorySpace S, class V>
T atomicAdd(gl::cuda::cpu::CountedPtr<T, S> p, V val) { return atomicAdd(p.get(), T(val)); }
/// atomicMax through a counted pointer (same result; not counted as a load or store).
template <class T, gl::cuda::cpu::MemorySpace S, class V>
T atomicMax(gl::cuda::cpu::CountedPtr<T, S> p, V val) { return atomicMax(p.get(), T(val)); }
/// atomicMin through a counted pointer (same result; not counted as a load or store).
template <class T, gl::cuda::cpu::MemorySpace S, class V>
T atomicMin(gl::cuda::cpu::CountedPtr<T, S> p, V val) { return atomicMin(p.get(), T(val)); }
/// atomicExch through a counted pointer (same result; not counted as a load or store).
template <class T, gl::cuda::cpu::MemorySpace S, class V>
T atomicExch(gl::cuda::cpu::CountedPtr<T, S> p, V val) { return atomicExch(p.get(), T(val)); }
/// atomicCAS through a counted pointer (same result; not counted as a load or store).
template <class T, gl::cuda::cpu::MemorySpace S, class V>
T atomicCAS(gl::cuda::cpu::CountedPtr<T, S> p, V compare, V val) {
    return atomicCAS(p.get(), T(compare), T(val));
}

/// Orders this thread's memory accesses for every thread of the grid.
inline void __threadfence() { std::atomic_thread_fence(std::memory_order_seq_cst); }
/// Orders this thread's memory accesses for the threads of its block.
inline void __threadfence_block() { std::atomic_thread_fence(std::memory_order_seq_cst); }

/// The bits of a float as an int (no conversion): what atomicCAS on a float's bits needs.
inline int __float_as_int(float x) { return std::bit_cast<int>(x); }
/// The float whose bits are @p x (no conversion): the inverse of __float_as_int.
inline float __int_as_float(int x) { return std::bit_cast<float>(x); }
/// The bits of a float as an unsigned int (no conversion).
inline unsigned __float_as_uint(float x) { return std::bit_cast<unsigned>(x); }
/// The float whose bits are @p x (no conversion): the inverse of __float_as_uint.
inline float __uint_as_float(unsigned x) { return std::bit_cast<float>(x); }
/// Number of set bits.
inline int __popc(unsigned x) { return std::popcount(x); }
/// Number of leading zero bits (32 for 0).
inline int __clz(int x) { return std::countl_zero(static_cast<unsigned>(x)); }
/// Position of the lowest set bit, counting from 1 (0 for 0).
inline int __ffs(int x) { return x == 0 ? 0 : std::countr_zero(static_cast<unsigned>(x)) + 1; }
/// A load through the read-only cache on a GPU; a plain load here.
template <class T>
T __ldg(const T* p) { return *p; }
