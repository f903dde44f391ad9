// Version 4 of the CPU GEMM family, step c: Goto's loops around the micro-kernel, on one
// thread (the registry's "packed_simd").
//
//   for jc in N, step NC:            a KC x NC panel of B lives in L3
//     for pc in K, step KC:
//       pack B(pc.., jc..)           into NR-wide slivers (step a)
//       for ic in M, step MC:        an MC x KC block of A lives in L2
//         pack A(ic.., pc..)         into MR-tall slivers (step a)
//         for jr in NC, step NR:     a KC x NR sliver of B stays in L1 (or L2, below)
//           for ir in MC, step MR:
//             micro-kernel: C[MR x NR] += Asliver * Bsliver, in registers (step b)
//
// Why it is fast: the micro-kernel runs at nearly the FMA units' rate as long as its two
// streams arrive in time, and the blocking keeps each stream in the cache level that can
// feed it: the A sliver is reused NC/NR times from L2, the B sliver MC/MR times from L1.
// That is the textbook sizing. With AVX-512 our KC is 1024 (blocking_for says why), so a
// B sliver is 128 KiB and both slivers stream from L2, which keeps up with the kernel.
// What is left slow: it uses one core (version 5).
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <memory>

#include "base/error.hpp"
#include "kernels/cpu/sgemm/packed.hpp"
#include "kernels/cpu/sgemm/sgemm.hpp"

namespace gl::kernels::packed {
namespace {

// Packing buffers, one pair per thread, aligned for vector loads, grown on demand.
struct AlignedBuffer {
    std::unique_ptr<float, decltype(&std::free)> data{nullptr, &std::free};
    std::size_t capacity = 0;
    float* get(std::size_t floats) {
        if (floats > capacity) {
            const std::size_t bytes = (floats * sizeof(float) + 63) / 64 * 64;
            data.reset(static_cast<float*>(std::aligned_alloc(64, bytes)));
            check(data != nullptr, "gemm: out of memory for a packing buffer");
            capacity = bytes / sizeof(float);
        }
        return data.get();
    }
};

std::int64_t round_up(std::int64_t x, std::int64_t m) { return (x + m - 1) / m * m; }

}  // namespace

void edge_tile(const MicroKernel& mk, std::int64_t kc, const float* a, const float* b, float* c,
               std::int64_t ldc, std::int64_t rows, std::int64_t cols, bool accumulate) {
    alignas(64) float t[16 * 32];
    mk.run(kc, a, b, t, mk.nr, false);
    for (std::int64_t i = 0; i < rows; ++i)
        for (std::int64_t j = 0; j < cols; ++j)
            c[i * ldc + j] = (accumulate ? c[i * ldc + j] : 0.0f) + t[i * mk.nr + j];
}

void gemm_packed_block(const GemmArgs<float>& g, std::int64_t i0, std::int64_t i1, std::int64_t j0,
                       std::int64_t j1) {
    if (i0 >= i1 || j0 >= j1) return;
    if (g.K == 0) {  // an empty sum: C is zero
        for (std::int64_t i = i0; i < i1; ++i) std::fill(g.C + i * g.ldc + j0, g.C + i * g.ldc + j1, 0.0f);
        return;
    }
    const Isa isa = active_isa();
    const MicroKernel& mk = micro_kernel(isa);
    const Blocking bl = blocking_for(isa);
    thread_local AlignedBuffer a_buffer, b_buffer;
    // LAB 02 BEGIN: the loops around the micro-kernel
    // Goto's five loops (see the top of this file) over rows [i0, i1) and columns
    // [j0, j1) of C. The first KC block overwrites C, later ones add to it. Full tiles go
    // straight to mk.run; tiles that stick out of C go through edge_tile.
    const std::int64_t mr = mk.mr, nr = mk.nr;
    float* a_pack = a_buffer.get(static_cast<std::size_t>(round_up(std::min(bl.mc, i1 - i0), mr) * bl.kc));
    float* b_pack = b_buffer.get(static_cast<std::size_t>(round_up(std::min(bl.nc, j1 - j0), nr) * bl.kc));
    // Split K into equal blocks of at most KC (784 = 2 x 392, not 384 + 384 + 16).
    const std::int64_t k_blocks = (g.K + bl.kc - 1) / bl.kc;
    const std::int64_t kc_even = (g.K + k_blocks - 1) / k_blocks;
    for (std::int64_t jc = j0; jc < j1; jc += bl.nc) {
        const std::int64_t nc = std::min(bl.nc, j1 - jc);
        for (std::int64_t pc = 0; pc < g.K; pc += kc_even) {
            const std::int64_t kc = std::min(kc_even, g.K - pc);
            const bool accumulate = pc > 0;
            pack_b(g, pc, kc, jc, nc, mk.nr, b_pack);
            for (std::int64_t ic = i0; ic < i1; ic += bl.mc) {
                const std::int64_t mc = std::min(bl.mc, i1 - ic);
                pack_a(g, ic, mc, pc, kc, mk.mr, a_pack);
                for (std::int64_t jr = 0; jr < nc; jr += nr) {
                    const float* b_sliver = b_pack + jr * kc;  // sliver jr / nr
                    for (std::int64_t ir = 0; ir < mc; ir += mr) {
                        const float* a_sliver = a_pack + ir * kc;
                        float* c = g.C + (ic + ir) * g.ldc + jc + jr;  // row ic + ir, column jc + jr
                        const std::int64_t rows = std::min(mr, mc - ir), cols = std::min(nr, nc - jr);
                        if (rows == mr && cols == nr)
                            mk.run(kc, a_sliver, b_sliver, c, g.ldc, accumulate);
                        else
                            edge_tile(mk, kc, a_sliver, b_sliver, c, g.ldc, rows, cols, accumulate);
                    }
                }
            }
        }
    }
    // LAB 02 END
}

}  // namespace gl::kernels::packed

namespace gl::kernels {
namespace {

void gemm_packed_simd(const GemmArgs<float>& g) { packed::gemm_packed_block(g, 0, g.M, 0, g.N); }

}  // namespace

GemmKernel gemm_packed_simd_kernel() {
    return {"packed_simd", "packed panels + register-blocked SIMD micro-kernel (run-time ISA dispatch)",
            &gemm_packed_simd, nullptr};
}

}  // namespace gl::kernels
