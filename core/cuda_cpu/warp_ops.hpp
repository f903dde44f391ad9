/// @file
/// @brief Warp shuffles and votes on the CPU runtime: __shfl*_sync, __ballot_sync,
/// __any_sync, __all_sync.
///
/// On a GPU the 32 lanes of a warp execute these together and read each other's registers.
/// Here each lane arrives with its value and suspends; when every lane named in the mask has
/// arrived, the scheduler computes every lane's result at once (block_scheduler.cpp,
/// warp_results) and lets them continue. The source lane of each shuffle follows the PTX
/// rules (shfl.sync with the clamp and segment mask CUDA passes for `width`).
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>
#include <source_location>
#include <type_traits>

namespace gl::cuda::inline cpu::detail {

/// The warp operations the scheduler knows.
enum class WarpOpKind : std::uint8_t { sync, shfl_idx, shfl_up, shfl_down, shfl_xor, ballot, any, all };

/// One lane's part of a warp operation.
struct WarpOp {
    WarpOpKind kind = WarpOpKind::sync;  ///< which operation (all lanes of the group must agree)
    unsigned mask = 0;        ///< the lanes that take part
    int lane_arg = 0;         ///< source lane, delta or xor mask (shuffles)
    int width = 32;           ///< shuffle segment width: 1, 2, 4, 8, 16 or 32
    std::uint64_t value = 0;  ///< the lane's value (shuffles) or predicate (votes), as bits
    std::source_location where;  ///< the call in the kernel, for deadlock reports
};

/// Suspends the calling lane until the whole group has arrived; returns this lane's result.
std::uint64_t warp_op(const WarpOp& op);

/// The bytes of @p v in a 64-bit word: shuffles move bits, whatever the type.
template <class T>
std::uint64_t to_bits(T v) {
    static_assert(std::is_trivially_copyable_v<T> && sizeof(T) <= 8,
                  "warp shuffles move values of at most 8 bytes");
    std::uint64_t bits = 0;
    std::memcpy(&bits, &v, sizeof(T));
    return bits;
}

/// The T whose bytes are the low sizeof(T) bytes of @p bits: the inverse of to_bits.
template <class T>
T from_bits(std::uint64_t bits) {
    T v;
    std::memcpy(&v, &bits, sizeof(T));
    return v;
}

/// The common body of the four shuffles: hand this lane's value to the warp exchange and
/// return the value the exchange picked for this lane.
template <class T>
T shuffle(WarpOpKind kind, unsigned mask, T var, int arg, int width, std::source_location where) {
    return from_bits<T>(warp_op({kind, mask, arg, width, to_bits(var), where}));
}

}  // namespace gl::cuda::cpu::detail

/// The value of @p var in lane @p srcLane (taken modulo @p width, inside this lane's segment).
template <class T>
T __shfl_sync(unsigned mask, T var, int srcLane, int width = 32,
              std::source_location where = std::source_location::current()) {
    using namespace gl::cuda::cpu::detail;
    return shuffle(WarpOpKind::shfl_idx, mask, var, srcLane, width, where);
}

/// The value of @p var in lane (this lane - delta); lanes below the segment keep their own.
template <class T>
T __shfl_up_sync(unsigned mask, T var, unsigned delta, int width = 32,
                 std::source_location where = std::source_location::current()) {
    using namespace gl::cuda::cpu::detail;
    return shuffle(WarpOpKind::shfl_up, mask, var, static_cast<int>(delta), width, where);
}

/// The value of @p var in lane (this lane + delta); lanes past the segment keep their own.
template <class T>
T __shfl_down_sync(unsigned mask, T var, unsigned delta, int width = 32,
                   std::source_location where = std::source_location::current()) {
    using namespace gl::cuda::cpu::detail;
    return shuffle(WarpOpKind::shfl_down, mask, var, static_cast<int>(delta), width, where);
}

/// The value of @p var in lane (this lane XOR laneMask): the butterfly of tree reductions.
template <class T>
T __shfl_xor_sync(unsigned mask, T var, int laneMask, int width = 32,
                  std::source_location where = std::source_location::current()) {
    using namespace gl::cuda::cpu::detail;
    return shuffle(WarpOpKind::shfl_xor, mask, var, laneMask, width, where);
}

/// Bit i is set when lane i is in @p mask and its @p predicate is non-zero.
inline unsigned __ballot_sync(unsigned mask, int predicate,
                              std::source_location where = std::source_location::current()) {
    using namespace gl::cuda::cpu::detail;
    return static_cast<unsigned>(warp_op({WarpOpKind::ballot, mask, 0, 32, predicate != 0, where}));
}

/// Non-zero when the predicate is non-zero in any lane of @p mask.
inline int __any_sync(unsigned mask, int predicate,
                      std::source_location where = std::source_location::current()) {
    using namespace gl::cuda::cpu::detail;
    return static_cast<int>(warp_op({WarpOpKind::any, mask, 0, 32, predicate != 0, where}));
}

/// Non-zero when the predicate is non-zero in every lane of @p mask.
inline int __all_sync(unsigned mask, int predicate,
                      std::source_location where = std::source_location::current()) {
    using namespace gl::cuda::cpu::detail;
    return static_cast<int>(warp_op({WarpOpKind::all, mask, 0, 32, predicate != 0, where}));
}
