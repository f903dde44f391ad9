/// @file
/// @brief The check the CPU GEMM timing tools (gemm_calls, gemm_ceiling) make of the kernel
/// names they are given, before timing anything.
#pragma once

#include <string>
#include <vector>

#include "base/error.hpp"
#include "kernels/gemm.hpp"

namespace gl::bench {

/// Throws, naming @p tool, unless every name in @p names is a CPU GEMM kernel that can run
/// here (find_gemm's own error lists the known names).
inline void check_cpu_gemm_kernels(const std::string& tool, const std::vector<std::string>& names) {
    for (const auto& name : names) {
        const auto& kernel = gl::kernels::find_gemm(name);
        if (name.rfind("cuda", 0) == 0)
            throw gl::Error(tool + ": '" + name + "' is a CUDA kernel; this tool times CPU kernels");
        const std::string why = gl::kernels::why_unavailable(kernel);
        if (!why.empty()) throw gl::Error(tool + ": kernel '" + name + "' cannot run here: " + why);
    }
}

}  // namespace gl::bench
