/// @file
/// @brief The part both GEMM registries share (gemm_registry.cpp for FP32,
/// gemm_lowp_registry.cpp for 16-bit operands): a table of named kernels, assembled from
/// the kernel families' headers in a fixed order, and looked up by name.
#pragma once

#include <string>
#include <vector>

#include "base/error.hpp"

namespace gl::kernels {

/// The entry of @p table (a vector of structs with a `name`) called @p name, or null.
template <class Table>
auto find_named(Table& table, const std::string& name) -> decltype(&table.front()) {
    for (auto& k : table)
        if (k.name == name) return &k;
    return nullptr;
}

/// The entry of @p table called @p name; otherwise throws gl::Error naming the
/// @p family ("GEMM kernel", "low-precision GEMM kernel") and listing the known names.
template <class Kernel>
const Kernel& find_named_or_throw(const std::vector<Kernel>& table, const std::string& name,
                                  const std::string& family) {
    if (const Kernel* k = find_named(table, name)) return *k;
    std::string known;
    for (const Kernel& k : table) known += (known.empty() ? "" : ", ") + k.name;
    throw Error("unknown " + family + " '" + name + "'; known kernels: " + known);
}

/// Appends @p family to @p table, in the family's order.
template <class Kernel>
void append_family(std::vector<Kernel>& table, const std::vector<Kernel>& family) {
    table.insert(table.end(), family.begin(), family.end());
}

}  // namespace gl::kernels
