/// @file
/// @brief CUDA's warp matrix functions (`nvcuda::wmma`, the tensor cores) for kernels
/// written once for nvcc and the CPU runtime.
///
/// Under nvcc this is <mma.h>. On the CPU runtime the same names compute the same sums on
/// the CPU, so a tensor-core kernel runs, and is tested, without a GPU:
///
/// | on a GPU | here |
/// |---|---|
/// | a fragment spreads its tile over the 32 lanes' registers, in a layout CUDA does not specify | every lane holds the whole tile, row-major |
/// | `load_matrix_sync` / `store_matrix_sync`: the warp together moves the tile | each lane moves the whole tile (the 32 stores write the same values) |
/// | `mma_sync`: the tensor cores multiply the tiles | each lane multiplies them with three loops |
/// | every lane of the warp must make each call | each call is a `__syncwarp()` first: a lane that skips one is reported as a deadlock |
///
/// Because the fragment's layout is unspecified on the GPU, a correct kernel cannot tell
/// the difference; element-wise code over `frag.x[0 .. num_elements)` works on both (it
/// sees 8 elements per lane there, the whole tile here). The cost is 32 times the work
/// per warp, which is fine for tests. Products are exact in the accumulator type (an FP16
/// product fits a float; an 8-bit product fits an int); sums are taken in k order, in the
/// accumulator type, wrapping modulo 2^32 for integers. Only what gradlab's kernels use is
/// provided: the 16 x 16 x 16 shape, FP16 or 8-bit inputs, float or int accumulators.
#pragma once

#if defined(__CUDACC__)

#include <mma.h>

#else

#include <cstddef>
#include <cstdint>
#include <source_location>
#include <type_traits>

#include "cuda_cpu/sync.hpp"

namespace nvcuda::wmma {

/// Which operand a fragment is: A (m x k), B (k x n) or the accumulator (m x n).
struct matrix_a {};
struct matrix_b {};  ///< @copydoc matrix_a
struct accumulator {};  ///< @copydoc matrix_a
/// How an A or B tile lies in memory: rows contiguous, or columns contiguous.
struct row_major {};
struct col_major {};  ///< @copydoc row_major
/// How an accumulator tile lies in memory (given at load and store time).
enum layout_t { mem_row_major, mem_col_major };

namespace detail {
template <class Use, int m, int n, int k>
struct tile_shape;
template <int m, int n, int k>
struct tile_shape<matrix_a, m, n, k> {
    static constexpr int rows = m, cols = k;
};
template <int m, int n, int k>
struct tile_shape<matrix_b, m, n, k> {
    static constexpr int rows = k, cols = n;
};
template <int m, int n, int k>
struct tile_shape<accumulator, m, n, k> {
    static constexpr int rows = m, cols = n;
};
}  // namespace detail

/// One warp's tile of an operand. Here every lane holds all of it, row-major.
template <class Use, int m, int n, int k, class T, class Layout = void>
struct fragment {
    static_assert(m == 16 && n == 16 && k == 16, "the CPU runtime provides the 16 x 16 x 16 shape only");
    using element_type = T;  ///< the stored type
    static constexpr int rows = detail::tile_shape<Use, m, n, k>::rows;  ///< tile rows
    static constexpr int cols = detail::tile_shape<Use, m, n, k>::cols;  ///< tile columns
    static constexpr int num_elements = rows * cols;  ///< elements this lane holds
    T x[num_elements];  ///< the tile, row-major
    /// Element (r, c) of the tile.
    T& at(int r, int c) { return x[r * cols + c]; }
    /// @copydoc at
    const T& at(int r, int c) const { return x[r * cols + c]; }
};

namespace detail {
/// Offset of element (r, c) of a tile stored with leading dimension @p ldm.
constexpr std::size_t offset(int r, int c, unsigned ldm, bool row_major) {
    return row_major ? std::size_t(r) * ldm + c : std::size_t(c) * ldm + r;
}

template <class F, class T>
void load(F& f, const T* p, unsigned ldm, bool row_major) {
    for (int r = 0; r < F::rows; ++r)
        for (int c = 0; c < F::cols; ++c) f.at(r, c) = p[offset(r, c, ldm, row_major)];
}

/// The product of two input elements in the accumulator type: exact for FP16 (in float)
/// and for 8-bit integers (in int).
template <class Acc, class In>
Acc product(In a, In b) {
    return static_cast<Acc>(static_cast<float>(a)) * static_cast<Acc>(static_cast<float>(b));
}
template <>
inline int product<int, signed char>(signed char a, signed char b) { return int(a) * int(b); }
template <>
inline int product<int, unsigned char>(unsigned char a, unsigned char b) { return int(a) * int(b); }

/// a + b, wrapping modulo 2^32 for int as the hardware does (signed overflow is undefined in C++).
template <class Acc>
Acc add(Acc a, Acc b) {
    if constexpr (std::is_same_v<Acc, int>)
        return static_cast<int>(static_cast<std::uint32_t>(a) + static_cast<std::uint32_t>(b));
    else
        return a + b;
}
}  // namespace detail

/// Sets every element of @p f to @p v (warp-wide).
template <class Use, int m, int n, int k, class T, class Layout>
void fill_fragment(fragment<Use, m, n, k, T, Layout>& f, const T& v,
                   std::source_location where = std::source_location::current()) {
    __syncwarp(0xffffffffu, where);
    for (T& e : f.x) e = v;
}

/// Loads an A or B tile from @p p, leading dimension @p ldm, in the fragment's layout (warp-wide).
template <class Use, int m, int n, int k, class T, class Layout>
void load_matrix_sync(fragment<Use, m, n, k, T, Layout>& f, const T* p, unsigned ldm,
                      std::source_location where = std::source_location::current()) {
    static_assert(!std::is_same_v<Use, accumulator>, "an accumulator load needs a layout_t");
    __syncwarp(0xffffffffu, where);
    detail::load(f, p, ldm, std::is_same_v<Layout, row_major>);
}

/// Loads an accumulator tile from @p p in @p layout (warp-wide).
template <int m, int n, int k, class T>
void load_matrix_sync(fragment<accumulator, m, n, k, T>& f, const T* p, unsigned ldm, layout_t layout,
                      std::source_location where = std::source_location::current()) {
    __syncwarp(0xffffffffu, where);
    detail::load(f, p, ldm, layout == mem_row_major);
}

/// Stores an accumulator tile to @p p in @p layout (warp-wide).
template <int m, int n, int k, class T>
void store_matrix_sync(T* p, const fragment<accumulator, m, n, k, T>& f, unsigned ldm, layout_t layout,
                       std::source_location where = std::source_location::current()) {
    __syncwarp(0xffffffffu, where);
    for (int r = 0; r < f.rows; ++r)
        for (int c = 0; c < f.cols; ++c) p[detail::offset(r, c, ldm, layout == mem_row_major)] = f.at(r, c);
}

/// d = a b + c (warp-wide): what one tensor-core instruction sequence computes.
template <int m, int n, int k, class In, class LayoutA, class LayoutB, class Acc>
void mma_sync(fragment<accumulator, m, n, k, Acc>& d, const fragment<matrix_a, m, n, k, In, LayoutA>& a,
              const fragment<matrix_b, m, n, k, In, LayoutB>& b, const fragment<accumulator, m, n, k, Acc>& c,
              std::source_location where = std::source_location::current()) {
    __syncwarp(0xffffffffu, where);
    for (int i = 0; i < m; ++i)
        for (int j = 0; j < n; ++j) {
            Acc sum = c.at(i, j);
            for (int p = 0; p < k; ++p) sum = detail::add(sum, detail::product<Acc>(a.at(i, p), b.at(p, j)));
            d.at(i, j) = sum;
        }
}

}  // namespace nvcuda::wmma

#endif
