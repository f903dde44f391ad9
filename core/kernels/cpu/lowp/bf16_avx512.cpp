// Low-precision GEMM, the AVX512-BF16 path: dot products (vdpbf16ps).
//
// One vdpbf16ps takes 32 bf16 pairs and adds a[2i]*b[2i] + a[2i+1]*b[2i+1] into 16 FP32
// lanes: twice the multiplies of an FP32 FMA on the same 512-bit register, and half the
// bytes to load. The kernel is the packed GEMM of the FP32 family (Goto's loops: B panel
// in L2/L3, A block in L2, a 12 x 32 micro-tile in 24 zmm accumulators) with operands
// packed in K pairs (pack.hpp). The products are exact in FP32 and the sums are
// FP32: bfloat16 storage, FP32 accumulation. Blocks of rows of C run on the intra-op
// threads (parallel/thread_pool.hpp), like the FP32 `threaded` kernel.
#include <cstring>
#include <vector>

#include "base/error.hpp"
#include "kernels/cpu/lowp/pack.hpp"
#include "kernels/cpu/lowp/paths.hpp"
#include "parallel/thread_pool.hpp"
#include "sys/cpu_info.hpp"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace gl::kernels {
namespace {

constexpr std::int64_t kMR = 12;   // rows of the micro-tile
constexpr std::int64_t kNR = 32;   // columns: two zmm of 16 FP32 lanes
constexpr std::int64_t kKC = 256;  // K per packed block (128 pairs)
constexpr std::int64_t kMC = 192;  // rows of A per packed block
constexpr std::int64_t kNC = 2048; // columns of B per packed panel

bool has_avx512_bf16() {
    const auto& f = sys::cpu_info().features;
    return f.avx512f && f.avx512_bf16;
}

#if defined(__x86_64__)
// c (kMR x kNR, row stride ldc) += packed a-sliver x packed b-sliver over `pairs` K pairs.
__attribute__((target("avx512f,avx512bf16"))) void micro_12x32(std::int64_t pairs, const std::uint16_t* a,
                                                                 const std::uint16_t* b, float* c, std::int64_t ldc) {
    __m512 acc[kMR][2];
#pragma GCC unroll 12
    for (int r = 0; r < kMR; ++r) acc[r][0] = acc[r][1] = _mm512_setzero_ps();
    for (std::int64_t p = 0; p < pairs; ++p) {
        const __m512bh b0 = (__m512bh)_mm512_loadu_si512(b);       // columns 0..15, k and k+1
        const __m512bh b1 = (__m512bh)_mm512_loadu_si512(b + 32);  // columns 16..31
#pragma GCC unroll 12
        for (int r = 0; r < kMR; ++r) {
            std::int32_t pair;  // row r's (k, k+1) elements as one 32-bit value, broadcast
            std::memcpy(&pair, a + 2 * r, sizeof pair);
            const __m512bh av = (__m512bh)_mm512_set1_epi32(pair);
            acc[r][0] = _mm512_dpbf16_ps(acc[r][0], av, b0);
            acc[r][1] = _mm512_dpbf16_ps(acc[r][1], av, b1);
        }
        a += 2 * kMR;
        b += 2 * kNR;
    }
#pragma GCC unroll 12
    for (int r = 0; r < kMR; ++r) {
        float* row = c + r * ldc;
        _mm512_storeu_ps(row, _mm512_add_ps(_mm512_loadu_ps(row), acc[r][0]));
        _mm512_storeu_ps(row + 16, _mm512_add_ps(_mm512_loadu_ps(row + 16), acc[r][1]));
    }
}

// One block of rows [ic, ic + mc) of C against the packed panel of B: pack the rows of A,
// then run the micro-kernel over every 12 x 32 tile (edges through a scratch tile).
void block_of_rows(const LowpGemmArgs& g, const std::uint16_t* packed_b, std::int64_t jc, std::int64_t nc,
                   std::int64_t pc, std::int64_t kc, std::int64_t ic, std::int64_t mc, std::uint16_t* packed_a) {
    const std::int64_t pairs = lowp::round_up(kc, 2) / 2;
    alignas(64) float edge[kMR * kNR];
    lowp::pack_a(g, ic, mc, pc, kc, kMR, 2, packed_a);
    for (std::int64_t jr = 0; jr < nc; jr += kNR) {
        const std::uint16_t* b = packed_b + jr * 2 * pairs;  // this sliver of B stays in L1
        for (std::int64_t ir = 0; ir < mc; ir += kMR) {
            const std::uint16_t* a = packed_a + ir * 2 * pairs;
            const std::int64_t rows = std::min(kMR, mc - ir), cols = std::min(kNR, nc - jr);
            if (rows == kMR && cols == kNR) {
                micro_12x32(pairs, a, b, g.C + (ic + ir) * g.ldc + jc + jr, g.ldc);
            } else {  // an edge: compute the full tile aside, add the part that exists
                std::fill(edge, edge + kMR * kNR, 0.0f);
                micro_12x32(pairs, a, b, edge, kNR);
                lowp::add_tile(g, edge, kNR, ic + ir, jc + jr, rows, cols);
            }
        }
    }
}
#endif

void gemm_bf16_avx512(const LowpGemmArgs& g) {
#if defined(__x86_64__)
    lowp::zero_c(g);
    std::vector<std::uint16_t> packed_b(static_cast<std::size_t>(kKC * lowp::round_up(std::min(g.N, kNC), kNR)));
    const std::int64_t blocks = (g.M + kMC - 1) / kMC;
    for (std::int64_t jc = 0; jc < g.N; jc += kNC) {
        const std::int64_t nc = std::min(kNC, g.N - jc);
        for (std::int64_t pc = 0; pc < g.K; pc += kKC) {
            const std::int64_t kc = std::min(kKC, g.K - pc);
            lowp::pack_b(g, pc, kc, jc, nc, kNR, 2, packed_b.data());
            // Blocks of rows of C are independent: the threads share the packed B panel and
            // each packs its own rows of A (as the FP32 `threaded` kernel does).
            parallel_for(blocks, 1, [&](std::int64_t first, std::int64_t last) {
                std::vector<std::uint16_t> packed_a(static_cast<std::size_t>(kKC * lowp::round_up(kMC, kMR)));
                for (std::int64_t blk = first; blk < last; ++blk)
                    block_of_rows(g, packed_b.data(), jc, nc, pc, kc, blk * kMC, std::min(kMC, g.M - blk * kMC),
                                  packed_a.data());
            });
        }
    }
#else
    (void)g;
    throw Error("bf16_avx512: this build is not for x86-64");
#endif
}

}  // namespace

LowpGemmKernel gemm_bf16_avx512_kernel() {
    return {"bf16_avx512", "packed 12x32 micro-kernel on AVX512-BF16 vdpbf16ps (bf16 pairs, FP32 accumulation)",
            false, true, "avx512_bf16", &has_avx512_bf16, &gemm_bf16_avx512};
}

}  // namespace gl::kernels
