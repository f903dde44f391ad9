// INT8 GEMM, the portable path: the packed, blocked loops of the instruction-set paths
// (pack.hpp) around a plain C++ micro-kernel, so every CPU runs the same data layout and
// epilogue, and the compiler vectorises what it can for the machine it targets.
#include "kernels/cpu/int8/pack.hpp"
#include "kernels/cpu/int8/paths.hpp"

namespace gl::kernels {
namespace {

constexpr std::int64_t kMR = 4, kNR = 16;

// tile (kMR x kNR) = packed a-sliver x packed b-sliver over kp values of K.
void micro_4x16(std::int64_t kp, const std::uint8_t* a, const std::int8_t* b, std::int32_t* tile, bool accumulate) {
    std::int32_t acc[kMR][kNR] = {};
    if (accumulate)
        for (std::int64_t r = 0; r < kMR; ++r)
            for (std::int64_t c = 0; c < kNR; ++c) acc[r][c] = tile[r * kNR + c];
    for (std::int64_t g = 0; g < kp / 4; ++g, a += 4 * kMR, b += 4 * kNR)  // one K group of 4
        for (std::int64_t r = 0; r < kMR; ++r)
            for (std::int64_t c = 0; c < kNR; ++c)
                for (std::int64_t e = 0; e < 4; ++e) acc[r][c] += a[r * 4 + e] * b[c * 4 + e];
    for (std::int64_t r = 0; r < kMR; ++r)
        for (std::int64_t c = 0; c < kNR; ++c) tile[r * kNR + c] = acc[r][c];
}

void gemm_int8_portable(const Int8GemmArgs& g) {
    int8::blocked_gemm(g, {kMR, kNR, 4, 4, 64, 256, 256}, micro_4x16);
}

bool always() { return true; }

}  // namespace

Int8GemmKernel gemm_int8_portable_kernel() {
    return {"int8_portable", "packed, blocked loops with a plain C++ 4x16 micro-kernel (every CPU)", "", &always,
            &gemm_int8_portable, false, kNR, 4};
}

}  // namespace gl::kernels
