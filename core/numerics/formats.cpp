#include "numerics/formats.hpp"

#include <cmath>
#include <cstdint>
#include <limits>

#include "base/error.hpp"
#include "numerics/bfloat16.hpp"
#include "numerics/half.hpp"

namespace gl::numerics {
namespace {

template <class T>
FormatInfo ieee_from_limits(const std::string& name) {
    using L = std::numeric_limits<T>;
    FormatInfo f;
    f.name = name;
    f.bits = static_cast<int>(sizeof(T) * 8);
    f.mantissa_bits = L::digits - 1;
    f.exponent_bits = f.bits - 1 - f.mantissa_bits;
    f.epsilon = static_cast<double>(L::epsilon());
    f.max = static_cast<double>(L::max());
    f.min_normal = static_cast<double>(L::min());
    f.min_subnormal = static_cast<double>(L::denorm_min());
    f.lowest = static_cast<double>(L::lowest());
    return f;
}

// A 16-bit float format described by decoding its bit patterns with our conversion:
// 1.0 has exponent field = bias and mantissa 0, so its bits are bias << mantissa_bits.
template <class H>
FormatInfo ieee16_from_bits(const std::string& name) {
    const auto value = [](std::uint32_t bits) {
        return static_cast<double>(static_cast<float>(H::from_bits(static_cast<std::uint16_t>(bits))));
    };
    const std::uint32_t m = H::kMantissaBits;
    const std::uint32_t max_exponent_field = (1u << H::kExponentBits) - 2;  // all ones is inf/NaN
    const std::uint32_t one = static_cast<std::uint32_t>(H::kBias) << m;
    FormatInfo f;
    f.name = name;
    f.bits = 16;
    f.exponent_bits = H::kExponentBits;
    f.mantissa_bits = H::kMantissaBits;
    f.epsilon = value(one + 1) - 1.0;
    f.max = value((max_exponent_field << m) | ((1u << m) - 1));
    f.min_normal = value(1u << m);
    f.min_subnormal = value(1u);
    f.lowest = -f.max;
    return f;
}

}  // namespace

std::vector<FormatInfo> format_table() {
    std::vector<FormatInfo> table = {ieee_from_limits<double>("FP64"), ieee_from_limits<float>("FP32"),
                                     ieee16_from_bits<half>("FP16"), ieee16_from_bits<bfloat16>("BF16")};
    FormatInfo i8;
    using L = std::numeric_limits<std::int8_t>;
    i8.name = "INT8";
    i8.bits = 8;
    i8.mantissa_bits = L::digits;
    i8.epsilon = 1;
    i8.max = L::max();
    i8.min_normal = 1;
    i8.min_subnormal = 1;
    i8.lowest = L::lowest();
    table.push_back(i8);
    for (auto& f : table) f.decimal_digits = (f.mantissa_bits + (f.exponent_bits ? 1 : 0)) * std::log10(2.0);
    return table;
}

FormatInfo format_info(const std::string& name) {
    std::string names;
    for (const auto& f : format_table()) {
        if (f.name == name) return f;
        names += (names.empty() ? "" : ", ") + f.name;
    }
    throw Error("format_info: unknown format '" + name + "'; known: " + names);
}

}  // namespace gl::numerics
