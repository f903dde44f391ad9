// Version 4 of the CPU GEMM family: packed panels and a register-blocked SIMD micro-kernel
// (the Goto/BLIS algorithm), on one thread.
//
//   for jc in N, step NC:            a KC x NC panel of B lives in L3
//     for pc in K, step KC:
//       pack B(pc.., jc..)           into NR-wide slivers, each read contiguously
//       for ic in M, step MC:        an MC x KC block of A lives in L2
//         pack A(ic.., pc..)         into MR-tall slivers
//         for jr in NC, step NR:     a KC x NR sliver of B stays in L1
//           for ir in MC, step MR:
//             micro-kernel: C[MR x NR] += Asliver * Bsliver, in registers
//
// Why it is fast: the micro-kernel keeps an MR x NR tile of C in vector registers for
// the whole KC loop, so each FMA needs no load or store of C; per step k it loads NR
// floats of B (NR/16 vector loads) and broadcasts MR floats of A, for MR*NR/16 FMAs.
// Packing makes both streams contiguous and aligned (a strided or transposed operand
// costs nothing extra in the inner loop), and the blocking keeps each stream in the
// cache level that can feed it fast enough.
//
// One micro-kernel per instruction set, chosen at run time from what the CPU reports:
//   portable  4 x 16, plain C++ the compiler vectorizes for the baseline ISA (SSE2)
//   avx2      6 x 16, 12 ymm accumulators, FMA3          (Haswell and later, Zen)
//   avx512   12 x 32, 24 zmm accumulators                 (Skylake-X and later, Zen 4)
// Each is compiled with a function-level target attribute, so the build runs on any
// x86-64 and only the dispatch decides what executes.
#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <memory>

#include "base/error.hpp"
#include "kernels/cpu/sgemm/packed.hpp"
#include "sys/cpu_info.hpp"

namespace gl::kernels::packed {
namespace {

// ---- the micro-kernels ------------------------------------------------------------------

// Adds (or writes) an MR x NR tile held in t into C.
template <int MR, int NR>
inline void store_tile(const float* t, float* c, std::int64_t ldc, bool accumulate) {
    for (int i = 0; i < MR; ++i)
        for (int j = 0; j < NR; ++j) c[i * ldc + j] = (accumulate ? c[i * ldc + j] : 0.0f) + t[i * NR + j];
}

// The specification of every micro-kernel, in plain C++: for each k, the outer product
// of a column of the A sliver and a row of the B sliver is added to the tile.
void micro_portable(std::int64_t kc, const float* a, const float* b, float* c, std::int64_t ldc,
                    bool accumulate) {
    constexpr int MR = 4, NR = 16;
    alignas(64) float t[MR * NR] = {};
    for (std::int64_t k = 0; k < kc; ++k, a += MR, b += NR)
        for (int i = 0; i < MR; ++i)
            for (int j = 0; j < NR; ++j) t[i * NR + j] += a[i] * b[j];
    store_tile<MR, NR>(t, c, ldc, accumulate);
}

__attribute__((target("avx2,fma"))) void micro_avx2(std::int64_t kc, const float* a, const float* b,
                                                     float* c, std::int64_t ldc, bool accumulate) {
    // LAB 02 BEGIN: the AVX2 micro-kernel (6 x 16)
    // Keep the 6 x 16 tile in 12 ymm registers (two per row). For each k: load the two
    // vectors of the B row, then for each of the 6 A values broadcast it and FMA it into
    // its row's two accumulators. At the end add the tile to C (or store it).
    constexpr int MR = 6;
    __m256 acc[MR][2];
    for (int i = 0; i < MR; ++i) acc[i][0] = acc[i][1] = _mm256_setzero_ps();
    for (std::int64_t k = 0; k < kc; ++k, a += MR, b += 16) {
        const __m256 b0 = _mm256_load_ps(b);
        const __m256 b1 = _mm256_load_ps(b + 8);
        for (int i = 0; i < MR; ++i) {
            const __m256 ai = _mm256_broadcast_ss(a + i);
            acc[i][0] = _mm256_fmadd_ps(ai, b0, acc[i][0]);
            acc[i][1] = _mm256_fmadd_ps(ai, b1, acc[i][1]);
        }
    }
    for (int i = 0; i < MR; ++i) {
        float* row = c + i * ldc;
        if (accumulate) {
            acc[i][0] = _mm256_add_ps(acc[i][0], _mm256_loadu_ps(row));
            acc[i][1] = _mm256_add_ps(acc[i][1], _mm256_loadu_ps(row + 8));
        }
        _mm256_storeu_ps(row, acc[i][0]);
        _mm256_storeu_ps(row + 8, acc[i][1]);
    }
    // LAB 02 END
}

__attribute__((target("avx512f"))) void micro_avx512(std::int64_t kc, const float* a, const float* b,
                                                      float* c, std::int64_t ldc, bool accumulate) {
    // LAB 02 BEGIN: the AVX-512 micro-kernel (12 x 32)
    // The same idea with 512-bit vectors: a 12 x 32 tile in 24 zmm registers, two loads
    // of B and 12 broadcasts of A per k for 24 FMAs. Prefetch the A sliver a few steps
    // ahead: it streams from L2 while the B sliver sits in L1.
    constexpr int MR = 12;
    __m512 acc[MR][2];
    for (int i = 0; i < MR; ++i) {
        acc[i][0] = acc[i][1] = _mm512_setzero_ps();
        // The tile of C is needed only at the end: start fetching it now.
        _mm_prefetch(reinterpret_cast<const char*>(c + i * ldc), _MM_HINT_T0);
        _mm_prefetch(reinterpret_cast<const char*>(c + i * ldc + 16), _MM_HINT_T0);
    }
    for (std::int64_t k = 0; k < kc; ++k, a += MR, b += 32) {
        _mm_prefetch(reinterpret_cast<const char*>(a + 8 * MR), _MM_HINT_T0);
        const __m512 b0 = _mm512_load_ps(b);
        const __m512 b1 = _mm512_load_ps(b + 16);
        for (int i = 0; i < MR; ++i) {
            const __m512 ai = _mm512_set1_ps(a[i]);
            acc[i][0] = _mm512_fmadd_ps(ai, b0, acc[i][0]);
            acc[i][1] = _mm512_fmadd_ps(ai, b1, acc[i][1]);
        }
    }
    for (int i = 0; i < MR; ++i) {
        float* row = c + i * ldc;
        if (accumulate) {
            acc[i][0] = _mm512_add_ps(acc[i][0], _mm512_loadu_ps(row));
            acc[i][1] = _mm512_add_ps(acc[i][1], _mm512_loadu_ps(row + 16));
        }
        _mm512_storeu_ps(row, acc[i][0]);
        _mm512_storeu_ps(row + 16, acc[i][1]);
    }
    // LAB 02 END
}

const MicroKernel kPortable{Isa::Portable, 4, 16, &micro_portable};
const MicroKernel kAvx2{Isa::Avx2, 6, 16, &micro_avx2};
const MicroKernel kAvx512{Isa::Avx512, 12, 32, &micro_avx512};

// ---- dispatch ---------------------------------------------------------------------------

Isa fastest_isa() { return supported_isas().back(); }

std::atomic<Isa>& chosen_isa() {
    static std::atomic<Isa> isa{fastest_isa()};
    return isa;
}

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

// One MR x NR tile of C at (i, j), of which only rows x cols lie inside C: the kernel
// writes a full tile into a scratch tile and the valid part is copied (edge tiles only).
void edge_tile(const MicroKernel& mk, std::int64_t kc, const float* a, const float* b, float* c,
               std::int64_t ldc, std::int64_t rows, std::int64_t cols, bool accumulate) {
    alignas(64) float t[16 * 32];
    mk.run(kc, a, b, t, mk.nr, false);
    for (std::int64_t i = 0; i < rows; ++i)
        for (std::int64_t j = 0; j < cols; ++j)
            c[i * ldc + j] = (accumulate ? c[i * ldc + j] : 0.0f) + t[i * mk.nr + j];
}

}  // namespace

std::string to_string(Isa isa) {
    switch (isa) {
        case Isa::Portable: return "portable";
        case Isa::Avx2: return "avx2";
        case Isa::Avx512: return "avx512";
    }
    return "?";
}

std::vector<Isa> supported_isas() {
    const auto& f = sys::cpu_info().features;
    std::vector<Isa> isas{Isa::Portable};
    if (f.avx2 && f.fma) isas.push_back(Isa::Avx2);
    if (f.avx512f) isas.push_back(Isa::Avx512);
    return isas;
}

const MicroKernel& micro_kernel(Isa isa) {
    const auto isas = supported_isas();
    check(std::find(isas.begin(), isas.end(), isa) != isas.end(),
          "gemm: this CPU cannot run the " + to_string(isa) + " micro-kernel");
    switch (isa) {
        case Isa::Avx512: return kAvx512;
        case Isa::Avx2: return kAvx2;
        case Isa::Portable: break;
    }
    return kPortable;
}

Blocking blocking_for(Isa isa) {
    // A deep KC makes each load and store of the C tile pay for more FMAs: the tile is
    // read and written once per KC block, and on Zen 4 that traffic, not the streams of
    // A and B, is what a shallow KC loses (KC = 192 measured 6% below KC = 384). With
    // AVX-512, KC = 1024 (an MC x KC block of A of 96 x 1024 floats, 384 KiB, in a 1 MiB
    // L2; the slivers of A and B then stream from L2, which keeps up) measured 1-4% above
    // KC = 384 on one thread, in alternating runs. AVX2's narrower tile keeps the
    // shallower block, sized for L1 slivers.
    switch (isa) {
        case Isa::Avx512: return {96, 1024, 4096};
        case Isa::Avx2: return {192, 384, 4096};
        case Isa::Portable: break;
    }
    return {128, 256, 2048};
}

void force_isa(std::optional<Isa> isa) {
    if (isa) micro_kernel(*isa);  // throws if the CPU cannot run it
    chosen_isa().store(isa ? *isa : fastest_isa());
}

Isa active_isa() { return chosen_isa().load(); }

namespace {

// A block of rows x 16 floats (rows <= 16) transposed in registers: column c of the
// block, rows values, goes to dst + c * dst_ld. Missing rows are zeros and are not
// stored. Three rounds of shuffles, each pairing rows at a wider grain:
//   1. unpack floats of rows 2i, 2i+1         lane L: [r0_0 r1_0 r0_1 r1_1] ...
//   2. unpack pairs (as doubles) of rows 4g..  lane L of s[g][e]: rows 4g..4g+3 of column 4L+e
//   3. shuffle 128-bit lanes across groups   one vector per column: all 16 rows
// GCC 12 warns that the unpack intrinsics read an uninitialised vector: their header
// passes _mm512_undefined_ps() as the (unused, all lanes written) merge source.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
__attribute__((target("avx512f"))) void transpose_block_avx512(const float* src, std::int64_t ld, int rows,
                                                                float* dst, std::int64_t dst_ld) {
    __m512 r[16], t[16];
    for (int i = 0; i < 16; ++i) r[i] = i < rows ? _mm512_loadu_ps(src + i * ld) : _mm512_setzero_ps();
    const __mmask16 keep = static_cast<__mmask16>((1u << rows) - 1);
    for (int i = 0; i < 8; ++i) {
        t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    __m512 s[4][4];  // s[g][e]: lane L holds rows 4g..4g+3 of column 4L + e
    for (int g = 0; g < 4; ++g) {
        const __m512d lo = _mm512_castps_pd(t[4 * g]), hi = _mm512_castps_pd(t[4 * g + 1]);
        const __m512d lo2 = _mm512_castps_pd(t[4 * g + 2]), hi2 = _mm512_castps_pd(t[4 * g + 3]);
        s[g][0] = _mm512_castpd_ps(_mm512_unpacklo_pd(lo, lo2));
        s[g][1] = _mm512_castpd_ps(_mm512_unpackhi_pd(lo, lo2));
        s[g][2] = _mm512_castpd_ps(_mm512_unpacklo_pd(hi, hi2));
        s[g][3] = _mm512_castpd_ps(_mm512_unpackhi_pd(hi, hi2));
    }
    for (int e = 0; e < 4; ++e) {
        const __m512 u0 = _mm512_shuffle_f32x4(s[0][e], s[1][e], 0x44);  // lanes A0 A1 B0 B1
        const __m512 u1 = _mm512_shuffle_f32x4(s[0][e], s[1][e], 0xEE);  // lanes A2 A3 B2 B3
        const __m512 u2 = _mm512_shuffle_f32x4(s[2][e], s[3][e], 0x44);  // lanes C0 C1 D0 D1
        const __m512 u3 = _mm512_shuffle_f32x4(s[2][e], s[3][e], 0xEE);  // lanes C2 C3 D2 D3
        _mm512_mask_storeu_ps(dst + (0 + e) * dst_ld, keep, _mm512_shuffle_f32x4(u0, u2, 0x88));   // lane 0 of each
        _mm512_mask_storeu_ps(dst + (4 + e) * dst_ld, keep, _mm512_shuffle_f32x4(u0, u2, 0xDD));   // lane 1
        _mm512_mask_storeu_ps(dst + (8 + e) * dst_ld, keep, _mm512_shuffle_f32x4(u1, u3, 0x88));   // lane 2
        _mm512_mask_storeu_ps(dst + (12 + e) * dst_ld, keep, _mm512_shuffle_f32x4(u1, u3, 0xDD));  // lane 3
    }
}
#pragma GCC diagnostic pop

}  // namespace

void transpose_into_sliver(const float* src, std::int64_t ld, std::int64_t cols, std::int64_t kc, int nr,
                           float* dst) {
    std::int64_t k0 = 0;
    if (cols == nr && active_isa() == Isa::Avx512)  // blocks of 16 k, in registers
        for (; k0 + 16 <= kc; k0 += 16)
            for (int j = 0; j < nr; j += 16)  // at most 16 rows of src per block
                transpose_block_avx512(src + j * ld + k0, ld, std::min(16, nr - j), dst + k0 * nr + j, nr);
    for (std::int64_t j = 0; j < cols; ++j)
        for (std::int64_t k = k0; k < kc; ++k) dst[k * nr + j] = src[j * ld + k];
    for (std::int64_t j = cols; j < nr; ++j)
        for (std::int64_t k = k0; k < kc; ++k) dst[k * nr + j] = 0.0f;
}

void pack_a(const GemmArgs<float>& g, std::int64_t i0, std::int64_t mc, std::int64_t p0,
            std::int64_t kc, int mr, float* dst) {
    // LAB 02 BEGIN: pack a block of A into MR-row slivers
    // Sliver s covers rows i0 + s*MR .. +MR-1; inside it, column k is MR consecutive
    // floats (dst[k * MR + r]), so the micro-kernel reads A strictly sequentially.
    // Rows past the end of the block are zeros. op(A)(i, k) is g.A[i * g.lda + k], or
    // g.A[k * g.lda + i] when g.trans_a: copy whole runs of memory for the layout at hand.
    // With A stored M x K a sliver is a small transpose: transpose_into_sliver (given, in
    // gemm_packed.hpp) does exactly that; call it or write the loops yourself.
    for (std::int64_t s = 0; s < mc; s += mr, dst += mr * kc) {
        const std::int64_t rows = std::min<std::int64_t>(mr, mc - s);
        if (g.trans_a) {  // A stored K x M: the MR values of one k are contiguous
            for (std::int64_t k = 0; k < kc; ++k) {
                const float* src = g.A + (p0 + k) * g.lda + i0 + s;
                for (std::int64_t r = 0; r < rows; ++r) dst[k * mr + r] = src[r];
                for (std::int64_t r = rows; r < mr; ++r) dst[k * mr + r] = 0.0f;
            }
        } else {  // A stored M x K: the MR rows of the sliver, transposed
            transpose_into_sliver(g.A + (i0 + s) * g.lda + p0, g.lda, rows, kc, mr, dst);
        }
    }
    // LAB 02 END
}

void pack_b(const GemmArgs<float>& g, std::int64_t p0, std::int64_t kc, std::int64_t j0,
            std::int64_t nc, int nr, float* dst) {
    // LAB 02 BEGIN: pack a panel of B into NR-column slivers
    // Sliver s covers columns j0 + s*NR .. +NR-1; inside it, row k is NR consecutive
    // floats (dst[s * NR * kc + k * NR + j]). Columns past the end are zeros. Read B in
    // the order it is stored: with B stored K x N, walking one sliver down its rows
    // would jump a whole row of B (often several pages) per NR floats, and every
    // access would wait for memory; row by row the hardware prefetcher streams it. With
    // B stored N x K each sliver is a transpose: transpose_into_sliver again.
    if (g.trans_b) {  // B stored N x K: each column of op(B) is a contiguous run along k
        for (std::int64_t s = 0; s < nc; s += nr, dst += nr * kc) {
            const std::int64_t cols = std::min<std::int64_t>(nr, nc - s);
            transpose_into_sliver(g.B + (j0 + s) * g.ldb + p0, g.ldb, cols, kc, nr, dst);
        }
    } else {  // B stored K x N: row k of the panel is contiguous; deal it out to the slivers
        for (std::int64_t k = 0; k < kc; ++k) {
            const float* src = g.B + (p0 + k) * g.ldb + j0;
            for (std::int64_t s = 0; s < nc; s += nr) {
                float* row = dst + s * kc + k * nr;  // sliver s / nr, row k
                const std::int64_t cols = std::min<std::int64_t>(nr, nc - s);
                for (std::int64_t j = 0; j < cols; ++j) row[j] = src[s + j];
                for (std::int64_t j = cols; j < nr; ++j) row[j] = 0.0f;
            }
        }
    }
    // LAB 02 END
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
