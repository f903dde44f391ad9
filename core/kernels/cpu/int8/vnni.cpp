// INT8 GEMM, the AVX512-VNNI path: vpdpbusd.
//
// One vpdpbusd takes 64 unsigned bytes and 64 signed bytes, multiplies them in pairs and
// adds each group of four products into one of 16 INT32 lanes: 64 multiply-adds per
// instruction where an FP32 FMA does 16, with a quarter of the bytes to load per
// operand. That is the 4x ceiling of INT8 over FP32 on the same vector width. The
// micro-tile is 12 rows x 32 columns: 24 zmm accumulators, two zmm of packed B per K group
// of four, and each row's four bytes of A broadcast. The products of u8 x s8 fit in 16
// bits and the four-term sums in 32, so nothing saturates (vpdpbusd, not vpdpbusds).
#include <cstring>

#include "kernels/cpu/int8/pack.hpp"
#include "kernels/cpu/int8/paths.hpp"
#include "kernels/cpu/int8/zmm_tile.hpp"
#include "sys/cpu_info.hpp"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace gl::kernels {
namespace {

#ifndef GL_MR
#define GL_MR 32
#define GL_NR 12
#endif
constexpr std::int64_t kMR = GL_MR, kNR = GL_NR;

bool has_vnni() {
    const auto& f = sys::cpu_info().features;
    return f.avx512f && f.avx512bw && f.avx512_vnni;
}

#if defined(__x86_64__)
// acc += a (u8) x the four s8 at b broadcast to all 16 lanes, with the broadcast embedded
// in the instruction's memory operand ({1to16}): GCC does not fold _mm512_set1_epi32 into
// vpdpbusd by itself, and the separate vpbroadcastd it emits instead costs an instruction
// per column.
__attribute__((target("avx512f,avx512vnni"), always_inline)) inline void dpbusd_broadcast(__m512i& acc, __m512i a,
                                                                                         const std::int8_t* b) {
    asm("vpdpbusd %[b]%{1to16%}, %[a], %[acc]" : [acc] "+v"(acc) : [a] "v"(a), [b] "m"(*reinterpret_cast<const std::int32_t*>(b)));
}

// The tile is computed transposed: each zmm holds 16 *rows* of one column, so the s8
// operand of vpdpbusd is one column's four K values, broadcast straight from memory into
// the instruction ({1to16}), and A is what is loaded as vectors. That saves the separate
// broadcast per row that the row-major layout needs: 2 loads and kNR fused
// load-and-dpbusd instructions per K group of four, instead of 2 + kMR + 2 kMR.
// tile (kNR columns x kMR rows, column-major: element (r, c) at tile[c * kMR + r]) =
// (accumulate ? tile : 0) + a-sliver x b-sliver over kc values of K.
__attribute__((target("avx512f,avx512bw,avx512vnni"))) void micro_kernel(std::int64_t kc, const std::uint8_t* a,
                                                                           const std::int8_t* b, std::int32_t* tile,
                                                                           bool accumulate) {
    constexpr int kVectors = kMR / 16;  // zmm of 16 rows per column
    __m512i acc[kNR][kVectors];
    int8::load_tile(acc, tile, kMR, accumulate);
    for (std::int64_t g = 0; g < kc / 4; ++g) {
        __m512i av[kVectors];  // kMR rows, four K each
#pragma GCC unroll 4
        for (int v = 0; v < kVectors; ++v) av[v] = _mm512_loadu_si512(a + 64 * v);
#pragma GCC unroll 16
        for (int c = 0; c < kNR; ++c)
#pragma GCC unroll 4
            for (int v = 0; v < kVectors; ++v) dpbusd_broadcast(acc[c][v], av[v], b + 4 * c);
        a += 4 * kMR;
        b += 4 * kNR;
    }
    int8::store_tile(acc, tile, kMR);
}
#endif

void gemm_int8_vnni(const Int8GemmArgs& g) {
#if defined(__x86_64__)
    // A B sliver of KC x 32 bytes (16 KiB) stays in L1 while the A slivers of the block
    // (MC x KC = 48 KiB) stream from L2.
    int8::blocked_gemm(g, {kMR, kNR, 4, 4, 96, 480, 512, true}, micro_kernel);
#else
    (void)g;
    throw Error("int8_vnni: this build is not for x86-64");
#endif
}

}  // namespace

Int8GemmKernel gemm_int8_vnni_kernel() {
    return {"int8_vnni", "packed 12x32 micro-kernel on AVX512-VNNI vpdpbusd (u8 x s8 in fours into INT32)",
            "avx512_vnni", &has_vnni, &gemm_int8_vnni, false, kNR, 4};
}

}  // namespace gl::kernels
