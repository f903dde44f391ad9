/// @file
/// @brief A 16 x 16 transpose of 32-bit lanes in AVX-512 registers, shared by the packing
/// of the FP32 GEMM (sgemm/4a_packing.cpp: a float per lane) and of the INT8 GEMM
/// (int8/pack.hpp: a group of four bytes per lane).
///
/// Owns: only the shuffle network. Callers load the rows and store the columns, with the
/// masks and strides their layouts need.
#pragma once

#if defined(__x86_64__)
#include <immintrin.h>

namespace gl::kernels {

// GCC 12 warns that the unpack intrinsics read an uninitialised vector: their header
// passes _mm512_undefined_ps() as the (unused, all lanes written) merge source.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
/// column[c] = lane c of row[0..15]. Three rounds of shuffles, each pairing rows at a
/// wider grain:
///   1. unpack lanes of rows 2i, 2i+1          128-bit lane L: [r0_0 r1_0 r0_1 r1_1] ...
///   2. unpack pairs (as doubles) of rows 4g..  lane L of s[g][e]: rows 4g..4g+3 of column 4L+e
///   3. shuffle 128-bit lanes across groups    one vector per column: all 16 rows
/// 64 shuffles for 256 lanes, where moving the lanes one by one takes 256 loads and stores.
__attribute__((target("avx512f"), always_inline)) inline void transpose_16x16(const __m512 (&row)[16],
                                                                            __m512 (&column)[16]) {
    __m512 t[16];
    for (int i = 0; i < 8; ++i) {
        t[2 * i] = _mm512_unpacklo_ps(row[2 * i], row[2 * i + 1]);
        t[2 * i + 1] = _mm512_unpackhi_ps(row[2 * i], row[2 * i + 1]);
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
        column[0 + e] = _mm512_shuffle_f32x4(u0, u2, 0x88);   // lane 0 of each
        column[4 + e] = _mm512_shuffle_f32x4(u0, u2, 0xDD);   // lane 1
        column[8 + e] = _mm512_shuffle_f32x4(u1, u3, 0x88);   // lane 2
        column[12 + e] = _mm512_shuffle_f32x4(u1, u3, 0xDD);  // lane 3
    }
}
#pragma GCC diagnostic pop

}  // namespace gl::kernels
#endif
