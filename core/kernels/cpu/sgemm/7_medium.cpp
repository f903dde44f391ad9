// Version 7 of the CPU GEMM family: medium problems as version 6's unpacked register
// tiles, on as many threads as the shape repays.
//
// SimpleNet's first layer has two GEMMs of 6.4 million multiply-adds: the forward
// 64 x 128 x 784 (the batch times W^T) and the weight gradient 128 x 784 x 64 (G^T X).
// Too large for one thread (version 6 keeps them on the calling thread only below a
// million), they went to version 5, which packs both operands on every thread: with
// M = 64 rows and K = 64 the packing copies are nearly as long as the arithmetic they
// feed (each of the two threads packs all of A), and the 12-row micro-tile covers 64 rows
// with 72. The one idea here: cut C into column stripes, one per thread, on 16-column
// boundaries, and let each thread run version 6's unpacked tiles (8 rows x up to 48
// columns in registers, masked at the edge) on its stripe. A thread reads op(A) and its
// columns of op(B) where they lie; only a transposed B is copied, and then each thread
// transposes just its own columns. How many threads: at least kMinWorkPerThread
// multiply-adds each, so a GEMM of a few microseconds is not handed to a sleeping
// worker. Below kSmallWork the problem is version 6's (one thread, no hand-off); above
// kMediumWork the packed blocks of version 5 (as version 8, which shares the end of each
// stripe between threads), whose cache blocking pays once the operands outgrow L2, take
// over.
#include <algorithm>
#include <cstdint>

#include "kernels/cpu/sgemm/packed.hpp"
#include "kernels/cpu/sgemm/sgemm.hpp"
#include "parallel/thread_pool.hpp"

namespace gl::kernels {
namespace {

// The limits of the range, in multiply-adds (see the top of the file). 2^20: version
// 6's bound. 2^25: above the CNN's fully connected layer (3136 -> 128 at batch 64, 2^24.6
// multiply-adds in each of its three GEMMs), whose stripes of B (up to 800 KiB a thread)
// still sit in L2: as stripes its GEMMs ran 1.1-1.4x faster than as version 5's packed
// blocks (bench_gemm's cnn_fc1 shapes, 2 threads, two alternating rounds; the bound was
// 2^24 before, a 256^3 problem).
constexpr double kSmallWork = 1 << 20;
constexpr double kMediumWork = 1 << 25;
constexpr double kMinWorkPerThread = 1 << 19;

constexpr std::int64_t kColumnsPerUnit = 16;  // one vector: stripes never split a vector

// Columns [j0, j1) of g's C as a problem of its own: the same A, B from column j0 (a
// row of a transposed B), C from column j0.
GemmArgs<float> column_stripe(const GemmArgs<float>& g, std::int64_t j0, std::int64_t j1) {
    GemmArgs<float> s = g;
    s.N = j1 - j0;
    s.B = g.trans_b ? g.B + j0 * g.ldb : g.B + j0;
    s.C = g.C + j0;
    return s;
}

void gemm_medium(const GemmArgs<float>& g) {
    static const SgemmFn small = gemm_small_kernel().sgemm, large = gemm_balanced_kernel().sgemm;
    const double work = gemm_work(g);
    if (work <= kSmallWork || g.K == 0) return small(g);  // version 6 (its K = 0 case too)
    if (work > kMediumWork) return large(g);             // version 8 (5, balanced at the end)
    const std::int64_t units = (g.N + kColumnsPerUnit - 1) / kColumnsPerUnit;
    const int threads = static_cast<int>(std::clamp<double>(
        std::min<double>(work / kMinWorkPerThread, static_cast<double>(units)), 1.0,
        static_cast<double>(get_num_threads())));
    parallel_run(threads, [&](int t) {
        const std::int64_t j0 = std::min(g.N, units * t / threads * kColumnsPerUnit);
        const std::int64_t j1 = std::min(g.N, units * (t + 1) / threads * kColumnsPerUnit);
        if (j0 < j1) small::gemm_unpacked(column_stripe(g, j0, j1));
    });
}

}  // namespace

GemmKernel gemm_medium_kernel() {
    return {"medium", "shape decides threads: medium GEMMs as 6's unpacked tiles on column stripes, one per thread",
            &gemm_medium, nullptr};
}

}  // namespace gl::kernels
