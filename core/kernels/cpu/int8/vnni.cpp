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
#include "sys/cpu_info.hpp"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace gl::kernels {
namespace {

constexpr std::int64_t kMR = 12, kNR = 32;

bool has_vnni() {
    const auto& f = sys::cpu_info().features;
    return f.avx512f && f.avx512bw && f.avx512_vnni;
}

#if defined(__x86_64__)
__attribute__((target("avx512f,avx512bw,avx512vnni"))) void micro_12x32(std::int64_t kp, const std::uint8_t* a,
                                                                          const std::int8_t* b, std::int32_t* tile) {
    __m512i acc[kMR][2];
#pragma GCC unroll 12
    for (int r = 0; r < kMR; ++r) acc[r][0] = acc[r][1] = _mm512_setzero_si512();
    for (std::int64_t g = 0; g < kp / 4; ++g) {
        const __m512i b0 = _mm512_loadu_si512(b);       // columns 0..15, four K each
        const __m512i b1 = _mm512_loadu_si512(b + 64);  // columns 16..31
#pragma GCC unroll 12
        for (int r = 0; r < kMR; ++r) {
            std::int32_t four;  // row r's four K values as one 32-bit lane, broadcast
            std::memcpy(&four, a + 4 * r, sizeof four);
            const __m512i av = _mm512_set1_epi32(four);
            acc[r][0] = _mm512_dpbusd_epi32(acc[r][0], av, b0);
            acc[r][1] = _mm512_dpbusd_epi32(acc[r][1], av, b1);
        }
        a += 4 * kMR;
        b += 4 * kNR;
    }
#pragma GCC unroll 12
    for (int r = 0; r < kMR; ++r) {
        _mm512_storeu_si512(tile + r * kNR, acc[r][0]);
        _mm512_storeu_si512(tile + r * kNR + 16, acc[r][1]);
    }
}
#endif

void gemm_int8_vnni(const Int8GemmArgs& g) {
#if defined(__x86_64__)
    // MC x K bytes of A (96 x 2048 = 192 KiB) stay in L2 while NC / 32 slivers of B stream past.
    int8::blocked_gemm(g, {kMR, kNR, 4, 4, 96, 512}, micro_12x32);
#else
    (void)g;
    throw Error("int8_vnni: this build is not for x86-64");
#endif
}

}  // namespace

Int8GemmKernel gemm_int8_vnni_kernel() {
    return {"int8_vnni", "packed 12x32 micro-kernel on AVX512-VNNI vpdpbusd (u8 x s8 in fours into INT32)",
            "avx512_vnni", &has_vnni, &gemm_int8_vnni};
}

}  // namespace gl::kernels
