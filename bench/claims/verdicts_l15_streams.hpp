// The verdicts of ASYNC-1 and DATA-3 (lab 15) as pure functions of what was measured; the
// experiments are in claims_l15_streams.cpp, the tests in tests/claims/test_verdicts_l15_streams.cpp.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "verdicts.hpp"

namespace gl::claims {

// ---- ASYNC-1 -----------------------------------------------------------------------------

/// The chunked pipeline on the CPU runtime, from its timeline, per number of streams.
struct Async1Run {
    int streams = 1;
    double wall_us = 0;            ///< first operation's start to last one's end (median)
    double overlap_fraction = 0;   ///< of the copies' busy time, the part a kernel ran in too
};

/// ASYNC-1's measurements: the CPU runtime's pipeline, and the GPU's when there is one.
struct Async1Measured {
    std::vector<Async1Run> runs;   ///< 1, 2 and 3 streams
    double no_overlap_sum_us = 0;  ///< copies' plus kernels' busy time in the 1-stream run
    std::optional<double> gpu_speedup;  ///< GPU: 1-stream time / best multi-stream time
    std::string gpu_name;          ///< the GPU, or why there is no GPU figure
};

/// Reproduced (CPU analogue) when one stream overlaps nothing (<= 5% of the copies' time),
/// the best multi-stream run overlaps at least half of its copies with kernels, and its wall
/// time is at least 3% below the no-overlap sum; NeedsGpu on top of that without a GPU
/// figure; with one, the GPU must also gain >= 1.2x from streams.
Judgement judge_async1(const Async1Measured& m);

// ---- DATA-3 ------------------------------------------------------------------------------

/// Host-to-device copies from pinned and pageable memory.
struct Data3Measured {
    double pinned_gbs = 0;        ///< CPU runtime: copy bandwidth from host_alloc memory
    double pageable_gbs = 0;      ///< ... from ordinary memory (staged, as a GPU's driver does)
    double pinned_call_fraction = 0;    ///< memcpy_async's host time / the copy's time, pinned
    double pageable_call_fraction = 0;  ///< the same from pageable memory
    std::optional<double> gpu_pinned_gbs, gpu_pageable_gbs;  ///< the same on a GPU
    std::string gpu_name;         ///< the GPU, or why there is no GPU figure
};

/// Reproduced (CPU analogue) when pinned copies are >= 1.2x faster than pageable ones, a
/// non-blocking copy from pinned memory returns in under half the copy's time, and one
/// from pageable memory does not return before the copy is (90%) done; NeedsGpu on top
/// of that without a GPU figure; with one, pinned must also be >= 1.2x faster there.
Judgement judge_data3(const Data3Measured& m);

}  // namespace gl::claims
