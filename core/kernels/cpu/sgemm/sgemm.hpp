/// @file
/// @brief The CPU FP32 GEMM family: C = op(A) op(B) for row-major float matrices
/// (kernels/gemm.hpp), one idea per version, in the order a student would invent them
/// (Lab 02). Each version is one small file in this folder:
///
///   version 1 (1_naive.cpp): the i-j-k triple loop, one dot product per element of C.
///             Obviously right, so it is the oracle of every test. Slow: the inner loop
///             walks B down a column, a new cache line per multiply-add, and its running
///             sum cannot be vectorized without reassociation.
///   version 2 (2_reordered.cpp): the loops in i-k-j order. The inner loop streams a row
///             of B into a row of C, every cache line used in full, and vectorizes. Slow
///             once B outgrows the cache: every row of C reloads all of B from memory.
///   version 3 (3_blocked.cpp): cache blocking. A 128 x 256 block of B is reused from L2
///             by 64 rows of A. Slow: every vector FMA still needs a load of B and a load
///             and a store of C, so the loads and stores, not the FMA units, set the pace.
///   version 4 (Goto/BLIS, the registry's "packed_simd"), in three steps (packed.hpp):
///     4a (4a_packing.cpp): blocks of A and panels of B copied into slivers that the
///             micro-kernel reads strictly in order, whatever the layout or transposes.
///     4b (4b_micro_kernels.cpp): an MR x NR tile of C held in vector registers over the
///             whole KC loop: per k, MR broadcasts of A and NR/16 loads of B feed MR*NR/16
///             FMAs. One per instruction set (portable, AVX2, AVX-512), chosen at run time.
///     4c (4c_packed_simd.cpp): Goto's five loops around the micro-kernel, blocked so each
///             stream comes from the cache level that can feed it. Slow: one core.
///   version 5 (5_threaded.cpp): version 4 on gl::get_num_threads() threads, C cut into
///             one stripe per thread. Slow on small and skinny shapes (SimpleNet's output
///             layer, N = 10): packing, the 12 x 32 tile's wasted columns and a thread
///             hand-off cost more than the few microseconds of arithmetic.
///   version 6 (6_small.cpp, "small"): the shape decides. Below about a
///             million multiply-adds, no packing and no threads: register tiles of up to
///             8 x 48 read the operands where they lie, masked at the right edge; larger
///             problems go to version 5.
///   version 7 (7_medium.cpp, "medium", what matmul uses): version 6's unpacked tiles on
///             threads, for problems of a few million multiply-adds (SimpleNet's first
///             layer: 64 x 128 x 784 forward, 128 x 784 x 64 weight gradient). C is cut
///             into column stripes, one per thread, as many threads as the shape repays;
///             each thread reads its columns of B in place (or transposes only those), so
///             nothing is packed. Smaller problems stay on the calling thread (6), larger
///             ones go to version 8.
///   version 8 (8_balanced.cpp, "balanced"): version 5, with the end of each stripe
///             shared. A thread that loses its CPU for a few milliseconds (a shared
///             machine) made version 5's whole call wait for it; here the row blocks of
///             each stripe's last K block are claimed, the owner from the top and threads
///             that have finished from the bottom, so they finish together. The same
///             tiles in the same order: the same bits as version 5.
///
/// Established libraries (Eigen, OpenBLAS, oneDNN) sit beside the family as peers, in
/// kernels/cpu/peers/; the 16-bit kernels are paths per instruction set, in
/// kernels/cpu/lowp/. Every version is checked against version 1 on shapes past every
/// block size, with all four transposes, and timed against the peers:
///   tests:   build/tests/unit_tests --gtest_filter='Registry/EveryKernel*:Gemm*'
///   timing:  build/bench/bench_gemm
///   the lab: labs/02-cpu-gemm/README.md (build/tests/lab02_tests)
#pragma once

#include <vector>

#include "kernels/gemm.hpp"

namespace gl::kernels {

/// @cond
// One function per version's file.
GemmKernel gemm_naive_kernel();        // 1_naive.cpp
GemmKernel gemm_reordered_kernel();    // 2_reordered.cpp
GemmKernel gemm_blocked_kernel();      // 3_blocked.cpp
GemmKernel gemm_packed_simd_kernel();  // 4c_packed_simd.cpp
GemmKernel gemm_threaded_kernel();     // 5_threaded.cpp
GemmKernel gemm_small_kernel();        // 6_small.cpp
GemmKernel gemm_medium_kernel();       // 7_medium.cpp
GemmKernel gemm_balanced_kernel();     // 8_balanced.cpp

namespace small {
// Version 6's path on the calling thread, whatever the size: masked register tiles that
// read op(A) in place and rows of op(B) (a transposed B copied first); version 4 on one
// thread without AVX-512. Version 7 runs it on stripes of C.
void gemm_unpacked(const GemmArgs<float>& g);
}  // namespace small

namespace balanced {
// Version 8 on get_num_threads() threads. Returns how many rows of the stripes' last K
// blocks were done by a thread other than the stripe's owner. Tests only: with
// owner_claim_limit >= 0 the owner of stripe 0 claims at most that many row blocks of its
// last block and leaves the rest to the others; that is complete only when the shares
// run in order on one thread (a nested region), where share 1 finishes stripe 0.
std::int64_t run(const GemmArgs<float>& g, std::int64_t owner_claim_limit = -1);
}  // namespace balanced

// Multiply-adds of a problem, M N K, as a double (no overflow for any shape).
inline double gemm_work(const GemmArgs<float>& g) {
    return static_cast<double>(g.M) * static_cast<double>(g.N) * static_cast<double>(g.K);
}
/// @endcond

/// The versions of the family, in order: what the GEMM registry lists first.
inline std::vector<GemmKernel> cpu_sgemm_versions() {
    return {gemm_naive_kernel(), gemm_reordered_kernel(), gemm_blocked_kernel(), gemm_packed_simd_kernel(),
            gemm_threaded_kernel(), gemm_small_kernel(), gemm_medium_kernel(), gemm_balanced_kernel()};
}

}  // namespace gl::kernels
