// The register tile of the AVX512-VNNI micro-kernels (vnni.cpp, vnni_rows.cpp,
// vnni_direct.cpp): Lines x Vectors zmm accumulators of 16 INT32 each, line l's vector v
// at tile + l * stride + 16 v in memory. What a line is (a row of C, or a column of the
// transposed tile) is the kernel's choice; moving the tile in and out is the same. Every
// loop is unrolled in full: GCC keeps an accumulator array it indexes with a loop variable
// on the stack, and then stores all of it on every K step (2.5x slower).
#pragma once

#include <cstdint>

#if defined(__x86_64__)
#include <immintrin.h>

namespace gl::kernels::int8 {

/// acc = the tile at @p tile when @p accumulate (a later pass over K adds to it), else 0.
template <int Lines, int Vectors>
__attribute__((target("avx512f"), always_inline)) inline void load_tile(__m512i (&acc)[Lines][Vectors],
                                                                        const std::int32_t* tile,
                                                                        std::int64_t stride, bool accumulate) {
#pragma GCC unroll 16
    for (int l = 0; l < Lines; ++l)
#pragma GCC unroll 4
        for (int v = 0; v < Vectors; ++v)
            acc[l][v] = accumulate ? _mm512_loadu_si512(tile + l * stride + 16 * v) : _mm512_setzero_si512();
}

/// The tile at @p tile = acc.
template <int Lines, int Vectors>
__attribute__((target("avx512f"), always_inline)) inline void store_tile(const __m512i (&acc)[Lines][Vectors],
                                                                         std::int32_t* tile, std::int64_t stride) {
#pragma GCC unroll 16
    for (int l = 0; l < Lines; ++l)
#pragma GCC unroll 4
        for (int v = 0; v < Vectors; ++v) _mm512_storeu_si512(tile + l * stride + 16 * v, acc[l][v]);
}

/// acc = row_terms[l] - column_terms[16 v ..]: where a direct tile (pack.hpp's DirectTile)
/// starts its sum, so that the finished sum is already compensated for the zero points.
template <int Lines, int Vectors>
__attribute__((target("avx512f"), always_inline)) inline void start_at_terms(__m512i (&acc)[Lines][Vectors],
                                                                             const std::int32_t* row_terms,
                                                                             const std::int32_t* column_terms) {
    __m512i columns[Vectors];
#pragma GCC unroll 4
    for (int v = 0; v < Vectors; ++v) columns[v] = _mm512_loadu_si512(column_terms + 16 * v);
#pragma GCC unroll 16
    for (int l = 0; l < Lines; ++l) {
        const __m512i row = _mm512_set1_epi32(row_terms[l]);
#pragma GCC unroll 4
        for (int v = 0; v < Vectors; ++v) acc[l][v] = _mm512_sub_epi32(row, columns[v]);
    }
}

/// The tile at @p tile = acc, with streaming stores when @p Stream (whole cache lines,
/// not read first: every line's address must be 64-byte aligned).
template <bool Stream, int Lines, int Vectors>
__attribute__((target("avx512f"), always_inline)) inline void store_tile_as(const __m512i (&acc)[Lines][Vectors],
                                                                            std::int32_t* tile, std::int64_t stride) {
    if constexpr (Stream) {
#pragma GCC unroll 16
        for (int l = 0; l < Lines; ++l)
#pragma GCC unroll 4
            for (int v = 0; v < Vectors; ++v)
                _mm512_stream_si512(reinterpret_cast<__m512i*>(tile + l * stride + 16 * v), acc[l][v]);
    } else {
        store_tile(acc, tile, stride);
    }
}

}  // namespace gl::kernels::int8

#endif
