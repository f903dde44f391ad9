// INT8 GEMM, the AVX512-VNNI path, second version: a row-major 6 x 64 micro-tile with K
// summed in registers (the orientation of oneDNN's u8s8s32 GEMM kernel).
//
// What changes from vnni.cpp (the transposed 32 x 12 tile), and why:
//  - Rows of C in the registers. Each of the 24 zmm accumulators holds 16 consecutive
//    columns of one row, so a finished tile is four contiguous vectors per row of C: the
//    epilogue (zero-point compensation, requantization) reads it row by row, where the
//    transposed tile left each row of C spread over twelve 16-row vectors (a strided
//    gather per element).
//  - B is the vector operand and A the broadcast one. vpdpbusd takes its u8 operand
//    (A) from a register and only the s8 one (B) from memory, so A's four bytes per row are
//    broadcast with a separate vpbroadcastd (6 per K group of four) and B's 64 columns
//    are four zmm loads: 10 loads per 24 vpdpbusd, against 14 for the transposed tile.
//    On Zen 4 the broadcast is a load, not an ALU instruction, so both tiles run the
//    inner loop at the vpdpbusd rate: measured alone on L2-resident slivers, 465 GOP/s per
//    core, one zmm vpdpbusd per cycle at about 3.6 GHz.
//  - 64 columns: 6 x 64 is the widest tile whose accumulators, four B vectors and the
//    broadcast fit the 32 zmm registers, and 64 divides the power-of-two widths of the
//    square problems (48 columns, the 8 x 48 tile, leaves the last sliver of N = 1024 a
//    third full; 6 x 64 measured 3-6% faster than 8 x 48 at N = 1024 and 2048).
//  - One K pass up to K = 2048. A B sliver of KC x 64 bytes is 128 KiB: it lives in L2
//    (1 MiB per core) rather than L1, and the loop does not slow down for it. The tile
//    therefore goes through memory once, at the end, instead of once per pass of 512.
#include "kernels/cpu/int8/pack.hpp"
#include "kernels/cpu/int8/paths.hpp"
#include "kernels/cpu/int8/zmm_tile.hpp"
#include "sys/cpu_info.hpp"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace gl::kernels {
namespace {

constexpr std::int64_t kMR = 6, kNR = 64;

bool has_vnni() {
    const auto& f = sys::cpu_info().features;
    return f.avx512f && f.avx512bw && f.avx512_vnni;
}

#if defined(__x86_64__)
constexpr int kVectors = kNR / 16;  // zmm of 16 columns per row

// acc += a-sliver x b-sliver over kc values of K. The sliver layouts are pack.hpp's: a is
// [kc / 4][6 rows][4], b is [kc / 4][64 columns][4].
__attribute__((target("avx512f,avx512bw,avx512vnni"), always_inline)) inline void multiply_slivers(
    std::int64_t kc, const std::uint8_t* a, const std::int8_t* b, __m512i (&acc)[kMR][kVectors]) {
    for (std::int64_t g = 0; g < kc / 4; ++g) {
        __m512i bv[kVectors];  // 64 columns, four K each
#pragma GCC unroll 4
        for (int v = 0; v < kVectors; ++v) bv[v] = _mm512_loadu_si512(b + 64 * v);
#pragma GCC unroll 8
        for (int r = 0; r < kMR; ++r) {
            std::int32_t four;  // row r's four K values, as one 32-bit lane to broadcast
            __builtin_memcpy(&four, a + 4 * r, 4);
            const __m512i ar = _mm512_set1_epi32(four);
#pragma GCC unroll 4
            for (int v = 0; v < kVectors; ++v) acc[r][v] = _mm512_dpbusd_epi32(acc[r][v], ar, bv[v]);
        }
        a += 4 * kMR;
        b += 4 * kNR;
    }
}

// tile (kMR x kNR, row-major: element (r, c) at tile[r * kNR + c]) =
// (accumulate ? tile : 0) + a-sliver x b-sliver over kc values of K.
__attribute__((target("avx512f,avx512bw,avx512vnni"))) void micro_kernel(std::int64_t kc, const std::uint8_t* a,
                                                                           const std::int8_t* b, std::int32_t* tile,
                                                                           bool accumulate) {
    __m512i acc[kMR][kVectors];
    int8::load_tile(acc, tile, kNR, accumulate);
    multiply_slivers(kc, a, b, acc);
    int8::store_tile(acc, tile, kNR);
}

// The whole sum over K, compensated for the zero points and stored straight into C
// (pack.hpp's DirectTile), without the epilogue's call per row. The compensation is where
// the sum starts: each accumulator begins at row term - column terms instead of zero, so
// the finished tile goes from the registers to C as it is (one store per vector; the
// earlier version stored the raw tile on the stack, read it back and added the terms
// there: 1% of the call at N = 1024, where a tile's K loop is only 256 steps). Every loop
// is unrolled in full, so that the accumulators are 24 registers and never an array in
// memory (zmm_tile.hpp); one instance per kind of store, for the same reason.
template <bool Stream>
__attribute__((target("avx512f,avx512bw,avx512vnni"))) void sum_into_c(std::int64_t kc, const std::uint8_t* a,
                                                                         const std::int8_t* b,
                                                                         const int8::DirectTile& out) {
    __m512i acc[kMR][kVectors];
    int8::start_at_terms(acc, out.row_terms, out.column_terms);
    multiply_slivers(kc, a, b, acc);
    int8::store_tile_as<Stream>(acc, out.c, out.ldc);
}

void micro_kernel_into_c(std::int64_t kc, const std::uint8_t* a, const std::int8_t* b, const int8::DirectTile& out) {
    if (out.stream) sum_into_c<true>(kc, a, b, out);
    else sum_into_c<false>(kc, a, b, out);
}
#endif

void gemm_int8_vnni_rows(const Int8GemmArgs& g) {
#if defined(__x86_64__)
    // Blocks of 60 rows x 256 columns: the A block (60 x 2048 bytes, 120 KiB) and one B
    // sliver (128 KiB) share L2 while B's slivers go by; 10 A slivers per B sliver. 256
    // columns, not 512: at N = 1024 that makes 72 blocks of about 35 us for the threads'
    // shared counter, not 36 of 70 us, so a thread slowed by the host waits less at the
    // end (in 4 alternating rounds against oneDNN: 0.98-1.02 at N = 1024 where 512 columns
    // gave 0.95-1.09; the same, 0.99, at 2048).
    int8::blocked_gemm(g, {kMR, kNR, 4, 4, 60, 256, 2048, false}, micro_kernel, micro_kernel_into_c);
#else
    (void)g;
    throw Error("int8_vnni_rows: this build is not for x86-64");
#endif
}

}  // namespace

Int8GemmKernel gemm_int8_vnni_rows_kernel() {
    return {"int8_vnni_rows",
            "packed 6x64 row-major micro-tile on AVX512-VNNI vpdpbusd (A broadcast, 4 zmm of B), K up to 2048 in "
            "registers",
            "avx512_vnni", &has_vnni, &gemm_int8_vnni_rows, false, kNR, 4};
}

}  // namespace gl::kernels
