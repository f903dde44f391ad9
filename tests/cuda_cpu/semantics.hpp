// What the semantics kernels (semantics_kernels.cuh) produce, collected on one runtime.
// Plain C++: the same type in the test compiled by g++ and in semantics_gpu.cu.
#pragma once

#include <vector>

namespace gl::test {

struct SemanticsResults {
    std::vector<int> shuffles;          ///< every shuffle kind at every width and several lane arguments
    std::vector<double> segment_sums;   ///< shfl_down and shfl_xor reductions at every width
    std::vector<unsigned> votes;        ///< ballot, any, all, and a half-warp ballot, partial warp included
    std::vector<long long> atomics;     ///< final values of contended atomics
    std::vector<float> reversed;        ///< dynamic shared memory round trip
};

/// Runs the semantics kernels on the CPU runtime.
SemanticsResults semantics_on_cpu();
/// Runs them on the GPU (defined in semantics_gpu.cu, builds with nvcc only).
SemanticsResults semantics_on_gpu();

}  // namespace gl::test
