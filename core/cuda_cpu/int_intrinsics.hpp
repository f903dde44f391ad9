/// @file
/// @brief CUDA's integer dot-product intrinsic `__dp4a` on the CPU runtime.
///
/// `__dp4a(a, b, c)` (sm_61 and later) treats each 32-bit operand as four 8-bit integers,
/// multiplies them pairwise and adds the four products to the 32-bit accumulator c: four
/// multiply-adds in one instruction, which is what INT8 inference on a GPU without tensor
/// cores is built on (claim Q-1). Byte 0 is the least significant byte, as on the GPU (both
/// are little-endian), so a word loaded from four consecutive int8 values pairs them in
/// memory order. The sum wraps modulo 2^32, as the hardware's does.
#pragma once

#include <cstdint>

namespace gl::cuda::inline cpu::detail {

/// Byte @p i (0 = least significant) of @p word, as the signed or unsigned 8-bit value.
template <class Byte>
constexpr int byte_of(std::uint32_t word, int i) {
    return static_cast<Byte>(static_cast<std::uint8_t>(word >> (8 * i)));
}

/// c + the sum of the four byte products, modulo 2^32.
template <class Byte>
constexpr std::uint32_t dp4a(std::uint32_t a, std::uint32_t b, std::uint32_t c) {
    std::uint32_t sum = c;
    for (int i = 0; i < 4; ++i)
        sum += static_cast<std::uint32_t>(byte_of<Byte>(a, i) * byte_of<Byte>(b, i));
    return sum;
}

}  // namespace gl::cuda::cpu::detail

/// c + a.byte0 b.byte0 + ... + a.byte3 b.byte3, the bytes read as signed 8-bit integers.
constexpr int __dp4a(int srcA, int srcB, int c) {
    using namespace gl::cuda::cpu::detail;
    return static_cast<int>(dp4a<std::int8_t>(static_cast<std::uint32_t>(srcA), static_cast<std::uint32_t>(srcB),
                                              static_cast<std::uint32_t>(c)));
}

/// The same with the bytes read as unsigned 8-bit integers.
constexpr unsigned __dp4a(unsigned srcA, unsigned srcB, unsigned c) {
    return gl::cuda::cpu::detail::dp4a<std::uint8_t>(srcA, srcB, c);
}
