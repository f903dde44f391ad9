// Low-precision GEMM, the AVX512-FP16 path: native FP16 arithmetic (Sapphire Rapids and
// later). vfmadd231ph multiplies and adds 32 halves per instruction *in FP16*: twice the
// lanes of FP32, but the running sum is rounded to 11 bits after every step. So the
// kernel adds in FP16 only over short runs of K (kKB steps) and then widens each partial
// sum into FP32 accumulators: FP16 arithmetic for speed, FP32 accumulation for accuracy
// (claim FP-5 measures why the second part matters).
//
// Used only where the CPU reports avx512_fp16; compiled everywhere (function-level target
// attribute), tested where it can run.
#include <vector>

#include "base/error.hpp"
#include "kernels/cpu/lowp/pack.hpp"
#include "kernels/cpu/lowp/paths.hpp"
#include "sys/cpu_info.hpp"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace gl::kernels {
namespace {

constexpr std::int64_t kMR = 8;    // rows of the micro-tile
constexpr std::int64_t kNR = 32;   // columns: one zmm of 32 halves
constexpr std::int64_t kKB = 8;    // K steps summed in FP16 before widening to FP32
constexpr std::int64_t kKC = 256;  // K per packed block
constexpr std::int64_t kMC = 128;  // rows of A per packed block

bool has_avx512_fp16() {
    const auto& f = sys::cpu_info().features;
    return f.avx512f && f.avx512bw && f.avx512vl && f.avx512_fp16;
}

#if defined(__x86_64__)
__attribute__((target("avx512f,avx512bw,avx512vl,avx512fp16"))) void micro_8x32(std::int64_t kc, const std::uint16_t* a,
                                                                                  const std::uint16_t* b, float* c,
                                                                                  std::int64_t ldc) {
    __m512 sum[kMR][2];
#pragma GCC unroll 8
    for (int r = 0; r < kMR; ++r) sum[r][0] = sum[r][1] = _mm512_setzero_ps();
    for (std::int64_t k0 = 0; k0 < kc; k0 += kKB) {
        __m512h acc[kMR];
#pragma GCC unroll 8
        for (int r = 0; r < kMR; ++r) acc[r] = _mm512_setzero_ph();
        for (std::int64_t k = k0; k < std::min(kc, k0 + kKB); ++k) {
            const __m512h bv = _mm512_castsi512_ph(_mm512_loadu_si512(b));
#pragma GCC unroll 8
            for (int r = 0; r < kMR; ++r)
                acc[r] = _mm512_fmadd_ph(_mm512_castsi512_ph(_mm512_set1_epi16(static_cast<short>(a[r]))), bv, acc[r]);
            a += kMR;
            b += kNR;
        }
#pragma GCC unroll 8
        for (int r = 0; r < kMR; ++r) {  // widen the FP16 partial sums into FP32 (vcvtph2ps)
            alignas(64) std::uint16_t partial[32];
            _mm512_store_si512(partial, _mm512_castph_si512(acc[r]));
            sum[r][0] = _mm512_add_ps(sum[r][0], _mm512_maskz_cvtph_ps(0xFFFF, _mm256_load_si256(reinterpret_cast<const __m256i*>(partial))));
            sum[r][1] = _mm512_add_ps(sum[r][1],
                                      _mm512_maskz_cvtph_ps(0xFFFF, _mm256_load_si256(reinterpret_cast<const __m256i*>(partial + 16))));
        }
    }
#pragma GCC unroll 8
    for (int r = 0; r < kMR; ++r) {
        float* row = c + r * ldc;
        _mm512_storeu_ps(row, _mm512_add_ps(_mm512_loadu_ps(row), sum[r][0]));
        _mm512_storeu_ps(row + 16, _mm512_add_ps(_mm512_loadu_ps(row + 16), sum[r][1]));
    }
}
#endif

void gemm_fp16_avx512fp16(const LowpGemmArgs& g) {
#if defined(__x86_64__)
    lowp::zero_c(g);
    std::vector<std::uint16_t> packed_b(static_cast<std::size_t>(kKC * lowp::round_up(g.N, kNR)));
    std::vector<std::uint16_t> packed_a(static_cast<std::size_t>(kKC * lowp::round_up(std::min(g.M, kMC), kMR)));
    alignas(64) float edge[kMR * kNR];
    for (std::int64_t pc = 0; pc < g.K; pc += kKC) {
        const std::int64_t kc = std::min(kKC, g.K - pc);
        lowp::pack_b(g, pc, kc, 0, g.N, kNR, 1, packed_b.data());
        for (std::int64_t ic = 0; ic < g.M; ic += kMC) {
            const std::int64_t mc = std::min(kMC, g.M - ic);
            lowp::pack_a(g, ic, mc, pc, kc, kMR, 1, packed_a.data());
            for (std::int64_t jr = 0; jr < g.N; jr += kNR)
                for (std::int64_t ir = 0; ir < mc; ir += kMR) {
                    const std::uint16_t* a = packed_a.data() + ir * kc;
                    const std::uint16_t* b = packed_b.data() + jr * kc;
                    const std::int64_t rows = std::min(kMR, mc - ir), cols = std::min(kNR, g.N - jr);
                    if (rows == kMR && cols == kNR) {
                        micro_8x32(kc, a, b, g.C + (ic + ir) * g.ldc + jr, g.ldc);
                    } else {
                        std::fill(edge, edge + kMR * kNR, 0.0f);
                        micro_8x32(kc, a, b, edge, kNR);
                        lowp::add_tile(g, edge, kNR, ic + ir, jr, rows, cols);
                    }
                }
        }
    }
#else
    (void)g;
    throw Error("fp16_avx512fp16: this build is not for x86-64");
#endif
}

}  // namespace

LowpGemmKernel gemm_fp16_avx512fp16_kernel() {
    return {"fp16_avx512fp16",
            "packed 8x32 micro-kernel on AVX512-FP16 vfmadd231ph, FP16 sums over 8 steps widened into FP32", true,
            false, "avx512_fp16", &has_avx512_fp16, &gemm_fp16_avx512fp16};
}

}  // namespace gl::kernels
