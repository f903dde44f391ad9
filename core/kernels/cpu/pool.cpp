// Max pooling with 2 x 2 windows and stride 2 in AVX-512 registers (see pool.hpp).
//
// One pass covers 16 outputs of a row: 32 input columns of the window's top row and 32 of
// its bottom row, two vectors each. A window's four taps sit in neighbouring lanes, so
// two permutes split each row's 32 values into the 16 left taps (even columns) and the
// 16 right taps (odd columns); the comparisons then run on whole vectors, with masks in
// place of the scalar loop's selects. A row shorter than 16 outputs (the CNN's: 14 and 7)
// is one masked pass; the portable loops (ops/pool.cpp) leave rows that short to the
// general window loop, because their vectorised loop never reaches a full vector there.
#include "kernels/cpu/pool.hpp"

#include <immintrin.h>
// GCC 12's AVX-512 intrinsics (here _mm512_max_ps) initialise their "undefined"
// pass-through operand from itself, which -W(maybe-)uninitialized reports at every use
// (GCC bug 105593).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

#include <algorithm>
#include <cstdint>

#include "sys/cpu_info.hpp"

namespace gl::kernels {
namespace {

constexpr std::int64_t kOutputsPerPass = 16;  // one vector of outputs

// The first n lanes of a vector (n may be 0 or more than 16).
__mmask16 first_lanes(std::int64_t n) {
    if (n <= 0) return 0;
    return n >= 16 ? static_cast<__mmask16>(0xFFFF) : static_cast<__mmask16>((1u << n) - 1u);
}

// The left (even) and right (odd) taps of 16 windows from 32 consecutive values.
struct Taps {
    __m512 left, right;
};

// 0, 2, 4, ..., 30: the even lanes of a pair of vectors, and twice each lane's index.
__attribute__((target("avx512f"))) inline __m512i even_lanes() {
    return _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
}

__attribute__((target("avx512f"))) Taps split_taps(const float* row, std::int64_t inputs) {
    const __m512i even = even_lanes();
    const __m512i odd = _mm512_add_epi32(even, _mm512_set1_epi32(1));
    const __m512 lo = _mm512_maskz_loadu_ps(first_lanes(inputs), row);
    // A short row skips the second load outright: a load with every lane masked off is
    // not free (on Zen 5 the CNN's pool2, 14 columns a row, took 1.3x as long with it).
    const __m512 hi = inputs > 16 ? _mm512_maskz_loadu_ps(first_lanes(inputs - 16), row + 16) : _mm512_setzero_ps();
    return {_mm512_permutex2var_ps(lo, even, hi), _mm512_permutex2var_ps(lo, odd, hi)};
}

// The largest tap of each window so far, and its index in the plane.
struct Best {
    __m512 value;
    __m512i at;
};

// A tap replaces the best only where it is strictly larger: false for a NaN on either
// side, so the first of equal values, and a NaN in the first tap, stay.
__attribute__((target("avx512f"))) inline void consider(Best& best, __m512 value, __m512i value_at) {
    const __mmask16 larger = _mm512_cmp_ps_mask(value, best.value, _CMP_GT_OQ);
    best.value = _mm512_mask_mov_ps(best.value, larger, value);
    best.at = _mm512_mask_mov_epi32(best.at, larger, value_at);
}

// ReLU of 16 taps, exactly as relu() computes it (x > 0 ? x : 0): vmaxps returns its
// second operand, +0, when the first is a NaN or either zero, so a NaN or -0 becomes +0.
__attribute__((target("avx512f"))) inline Taps relu(Taps t) {
    const __m512 zero = _mm512_setzero_ps();
    return {_mm512_max_ps(t.left, zero), _mm512_max_ps(t.right, zero)};
}

// One output row: windows on input rows top and top + W, whose first element is element
// row_start of the plane. With relu_first, each tap goes through ReLU before the
// comparisons, and a window whose maximum is 0 records -1: no input under it was
// positive, so ReLU's backward would block its gradient.
__attribute__((target("avx512f"))) void forward_row(const float* top, std::int64_t W, std::int64_t Q,
                                                    std::int64_t row_start, float* out, std::int32_t* where,
                                                    bool relu_first) {
    const __m512i twice_lane = even_lanes();
    const __m512i one = _mm512_set1_epi32(1), down = _mm512_set1_epi32(static_cast<std::int32_t>(W));
    for (std::int64_t q0 = 0; q0 < Q; q0 += kOutputsPerPass) {
        const std::int64_t outputs = std::min(kOutputsPerPass, Q - q0);
        Taps upper = split_taps(top + 2 * q0, 2 * outputs);
        Taps lower = split_taps(top + W + 2 * q0, 2 * outputs);
        if (relu_first) upper = relu(upper), lower = relu(lower);
        // The plane index of each window's top-left tap.
        const __m512i top_left = _mm512_add_epi32(_mm512_set1_epi32(static_cast<std::int32_t>(row_start + 2 * q0)), twice_lane);
        Best best{upper.left, top_left};
        consider(best, upper.right, _mm512_add_epi32(top_left, one));
        consider(best, lower.left, _mm512_add_epi32(top_left, down));
        consider(best, lower.right, _mm512_add_epi32(_mm512_add_epi32(top_left, down), one));
        if (relu_first) {
            const __mmask16 positive = _mm512_cmp_ps_mask(best.value, _mm512_setzero_ps(), _CMP_GT_OQ);
            best.at = _mm512_mask_mov_epi32(_mm512_set1_epi32(-1), positive, best.at);
        }
        const __mmask16 valid = first_lanes(outputs);
        _mm512_mask_storeu_ps(out + q0, valid, best.value);
        _mm512_mask_storeu_epi32(where + q0, valid, best.at);
    }
}

// Input rows 2p and 2p + 1 (top, and top + W) of the gradient from output row p: each
// input gets its window's gradient if it is where the window's maximum was, else 0, so
// every input is written once (no clearing pass, no scatter). where < 0 matches no tap.
__attribute__((target("avx512f"))) void backward_row(const float* gy, const std::int32_t* where, std::int64_t W,
                                                     std::int64_t Q, std::int64_t row_start, float* top) {
    const __m512i twice_lane = even_lanes();
    const __m512i down = _mm512_set1_epi32(static_cast<std::int32_t>(W));
    // Lane pairs (left tap, right tap) of outputs 0-7, then of outputs 8-15.
    const __m512i first_half = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
    const __m512i second_half = _mm512_add_epi32(first_half, _mm512_set1_epi32(8));
    for (std::int64_t q0 = 0; q0 < Q; q0 += kOutputsPerPass) {
        const std::int64_t outputs = std::min(kOutputsPerPass, Q - q0);
        const __mmask16 valid = first_lanes(outputs);
        const __m512 g = _mm512_maskz_loadu_ps(valid, gy + q0);
        const __m512i at = _mm512_maskz_loadu_epi32(valid, where + q0);
        const __m512i top_left = _mm512_add_epi32(_mm512_set1_epi32(static_cast<std::int32_t>(row_start + 2 * q0)), twice_lane);
        for (int r = 0; r < 2; ++r) {  // the window's top row, then its bottom row
            const __m512i left_at = r == 0 ? top_left : _mm512_add_epi32(top_left, down);
            const __m512i right_at = _mm512_add_epi32(left_at, _mm512_set1_epi32(1));
            const __m512 left = _mm512_maskz_mov_ps(_mm512_cmpeq_epi32_mask(at, left_at), g);
            const __m512 right = _mm512_maskz_mov_ps(_mm512_cmpeq_epi32_mask(at, right_at), g);
            float* row = top + r * W + 2 * q0;
            _mm512_mask_storeu_ps(row, first_lanes(2 * outputs), _mm512_permutex2var_ps(left, first_half, right));
            if (outputs > 8) _mm512_mask_storeu_ps(row + 16, first_lanes(2 * outputs - 16), _mm512_permutex2var_ps(left, second_half, right));
        }
    }
}

}  // namespace

bool has_max_pool_2x2() {
    static const bool has = sys::cpu_info().features.avx512f;
    return has;
}

void max_pool_2x2_plane(const float* in, std::int64_t H, std::int64_t W, float* out, std::int32_t* where,
                        bool relu_first) {
    const std::int64_t P = H / 2, Q = W / 2;
    for (std::int64_t p = 0; p < P; ++p)
        forward_row(in + 2 * p * W, W, Q, 2 * p * W, out + p * Q, where + p * Q, relu_first);
}

void max_pool_2x2_plane_backward(const float* gy, const std::int32_t* where, std::int64_t H, std::int64_t W, float* dx) {
    const std::int64_t P = H / 2, Q = W / 2;
    for (std::int64_t p = 0; p < P; ++p) {
        float* top = dx + 2 * p * W;
        backward_row(gy + p * Q, where + p * Q, W, Q, 2 * p * W, top);
        if (W % 2 != 0) top[W - 1] = top[2 * W - 1] = 0.0f;  // the odd last column: in no window
    }
    if (H % 2 != 0) std::fill(dx + (H - 1) * W, dx + H * W, 0.0f);  // the odd last row
}

}  // namespace gl::kernels
