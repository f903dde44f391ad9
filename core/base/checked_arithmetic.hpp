/// @file
/// @brief Multiplying sizes without overflow: the product, or "does not fit".
///
/// Owns: the arithmetic of sizes that come from outside (extents in a file header, a
/// shape built from an argument). Signed overflow is undefined behaviour and, in practice,
/// turns a corrupt header into a negative or small size that passes every later check.
/// These functions say "does not fit" instead; the caller, which knows where the numbers
/// came from, writes the error message. Knows nothing about tensors or files.
#pragma once

#include <concepts>
#include <optional>
#include <ranges>

namespace gl {

/// @p a times @p b, or std::nullopt when the product does not fit in T.
template <std::integral T>
constexpr std::optional<T> checked_mul(T a, T b) {
    T product{};
    if (__builtin_mul_overflow(a, b, &product)) return std::nullopt;
    return product;
}

/// The product of @p factors (1 for none), or std::nullopt when it does not fit in their
/// type. A zero factor makes the product 0 however large the others are, so an empty
/// array with huge extents is still an empty array.
template <std::ranges::input_range R>
    requires std::integral<std::ranges::range_value_t<R>>
constexpr std::optional<std::ranges::range_value_t<R>> checked_product(const R& factors) {
    using T = std::ranges::range_value_t<R>;
    for (T f : factors)
        if (f == 0) return T{0};
    T product = 1;
    for (T f : factors) {
        const std::optional<T> next = checked_mul(product, f);
        if (!next) return std::nullopt;
        product = *next;
    }
    return product;
}

}  // namespace gl
