/// @file
/// @brief Host-side helpers for kernels that need whole tiles: a matrix copied into a
/// zero-padded larger one, and the top-left corner of a result copied back.
///
/// The tensor-core and DP4A kernels take dimensions that are multiples of their tile (16,
/// or 4 for a K packed four to a word); the host entries pad with zeros, which add nothing
/// to a dot product, and crop the result.
#pragma once

#include <cstddef>
#include <vector>

namespace gl::kernels::cuda {

/// @p x rounded up to a multiple of @p to.
constexpr int round_up(int x, int to) { return (x + to - 1) / to * to; }

/// @p rows x @p cols of @p src (row stride @p cols) in the top-left of a @p rows_p x
/// @p cols_p matrix of zeros.
template <class T>
std::vector<T> padded(const T* src, int rows, int cols, int rows_p, int cols_p) {
    std::vector<T> out(std::size_t(rows_p) * cols_p, T{});
    for (int r = 0; r < rows; ++r)
        for (int c = 0; c < cols; ++c) out[std::size_t(r) * cols_p + c] = src[std::size_t(r) * cols + c];
    return out;
}

/// The top-left @p rows x @p cols of @p src (row stride @p cols_p) into @p dst (row stride @p cols).
template <class T>
void crop(const std::vector<T>& src, int cols_p, int rows, int cols, T* dst) {
    for (int r = 0; r < rows; ++r)
        for (int c = 0; c < cols; ++c) dst[std::size_t(r) * cols + c] = src[std::size_t(r) * cols_p + c];
}

}  // namespace gl::kernels::cuda
