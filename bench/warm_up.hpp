/// @file
/// @brief The untimed calls a benchmark makes before its timed loop (bench_gemm,
/// bench_int8).
///
/// A peer library's threads outlive its call: oneDNN's OpenMP workers spin for several
/// milliseconds after it returns (measured here: an N = 2048 GEMM of ours started at once
/// ran 15-20% slower than one started 20 ms later), and on a 2-CPU machine a spinning
/// thread takes a CPU from whatever runs next. With interleaved repetitions
/// (--benchmark_enable_random_interleaving) that cost would be charged to whichever
/// benchmark happened to follow a peer. Calling the kernel untimed for kWarmUp first
/// absorbs it, whatever ran before, and leaves the caches as the timed calls find them.
#pragma once

#include <chrono>

namespace gl::bench {

/// How long warm_up keeps calling.
inline constexpr auto kWarmUp = std::chrono::milliseconds(30);

/// Calls @p call at least once, and until kWarmUp has passed.
template <class Call>
void warm_up(Call&& call) {
    const auto start = std::chrono::steady_clock::now();
    do call();
    while (std::chrono::steady_clock::now() - start < kWarmUp);
}

}  // namespace gl::bench
