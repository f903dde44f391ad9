// Version 4 of the CPU GEMM family, step b: the register-blocked SIMD micro-kernels.
//
// A micro-kernel computes one MR x NR tile of C from packed slivers (step a) and keeps the
// tile in vector registers for the whole KC loop, so an FMA needs no load or store of C:
// per step k it loads NR floats of B (NR/16 vector loads) and broadcasts MR floats of A,
// for MR*NR/16 FMAs. The blocked loop of version 3 needed a load of B and a load and a
// store of C for every vector FMA; here loads are a fraction of the FMAs, and the core
// can keep both FMA units busy.
//
// One micro-kernel per instruction set, chosen at run time from what the CPU reports:
//   portable  4 x 16, plain C++ the compiler vectorizes for the baseline ISA (SSE2)
//   avx2      6 x 16, 12 ymm accumulators, FMA3          (Haswell and later, Zen)
//   avx512   12 x 32, 24 zmm accumulators                 (Skylake-X and later, Zen 4)
// Each is compiled with a function-level target attribute, so the build runs on any
// x86-64 and only the dispatch decides what executes. The block sizes that go with each
// (blocking_for) are here too: they are chosen for the micro-kernel's tile.
#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <cstdint>

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

// How many K steps before the end of its loop the AVX-512 micro-kernel asks for its C
// tile. The tile is needed only once the loop is done; asked for at the start, 12,000
// cycles ahead at KC = 1024, its lines were gone from L1 again by then (the 176 KiB of A
// and B slivers that stream through in between evict them). Asked for 256 steps ahead
// (about 3,000 cycles: enough for a line from memory), the GEMM at N = 2048 ran 1.5-3%
// faster on one thread (128 to 384 steps all measured alike) and 1-1.5% faster on two,
// where oneDNN's time / ours went from 0.98-0.99 to 0.99-1.00 (paired processes).
constexpr std::int64_t kCPrefetchSteps = 256;

__attribute__((target("avx512f"))) void micro_avx512(std::int64_t kc, const float* a, const float* b,
                                                      float* c, std::int64_t ldc, bool accumulate) {
    // LAB 02 BEGIN: the AVX-512 micro-kernel (12 x 32)
    // The same idea with 512-bit vectors: a 12 x 32 tile in 24 zmm registers, two loads
    // of B and 12 broadcasts of A per k for 24 FMAs. Prefetch the A sliver a few steps
    // ahead: it streams from L2 (at our KC = 1024 so does the 128 KiB B sliver, which the
    // hardware prefetcher follows on its own). Ask for the tile of C
    // kCPrefetchSteps before the loop ends, so that it is in L1 when it is added.
    constexpr int MR = 12;
    __m512 acc[MR][2];
#pragma GCC unroll 12
    for (int i = 0; i < MR; ++i) acc[i][0] = acc[i][1] = _mm512_setzero_ps();
    const std::int64_t prefetch_c_at = std::max<std::int64_t>(kc - kCPrefetchSteps, 0);
    for (std::int64_t k = 0; k < kc; ++k, a += MR, b += 32) {
        _mm_prefetch(reinterpret_cast<const char*>(a + 8 * MR), _MM_HINT_T0);
        if (k == prefetch_c_at)
#pragma GCC unroll 12
            for (int i = 0; i < MR; ++i) {
                _mm_prefetch(reinterpret_cast<const char*>(c + i * ldc), _MM_HINT_T0);
                _mm_prefetch(reinterpret_cast<const char*>(c + i * ldc + 16), _MM_HINT_T0);
            }
        const __m512 b0 = _mm512_load_ps(b);
        const __m512 b1 = _mm512_load_ps(b + 16);
#pragma GCC unroll 12
        for (int i = 0; i < MR; ++i) {
            const __m512 ai = _mm512_set1_ps(a[i]);
            acc[i][0] = _mm512_fmadd_ps(ai, b0, acc[i][0]);
            acc[i][1] = _mm512_fmadd_ps(ai, b1, acc[i][1]);
        }
    }
#pragma GCC unroll 12
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
    static const std::vector<Isa> isas = supported_isas();  // every GEMM call asks: allocate once
    if (std::find(isas.begin(), isas.end(), isa) == isas.end())
        throw Error("gemm: this CPU cannot run the " + to_string(isa) + " micro-kernel");
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

}  // namespace gl::kernels::packed
