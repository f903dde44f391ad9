// The low-precision GEMM registry: one table, assembled from the kernel family in the
// order of its header (the oracle, then the paths from portable to most capable), fixed
// after start-up.
#include "base/error.hpp"
#include "kernels/cpu/lowp/paths.hpp"
#include "kernels/gemm_lowp.hpp"
#include "kernels/kernel_table.hpp"

namespace gl::kernels {

const std::vector<LowpGemmKernel>& lowp_gemm_kernels() {
    static const std::vector<LowpGemmKernel> kernels = cpu_lowp_gemm_paths();  // best_lowp_gemm() picks the last that can run
    return kernels;
}

const LowpGemmKernel& find_lowp_gemm(const std::string& name) {
    return find_named_or_throw(lowp_gemm_kernels(), name, "low-precision GEMM kernel");
}

const LowpGemmKernel& best_lowp_gemm(DType dtype) {
    const auto& all = lowp_gemm_kernels();
    for (auto k = all.rbegin(); k != all.rend(); ++k)
        if (k->supports(dtype) && k->available()) return *k;
    throw Error("no low-precision GEMM kernel takes " + name_of(dtype));
}

void run_lowp_gemm(const LowpGemmKernel& kernel, const LowpGemmArgs& args) {
    check(kernel.supports(args.dtype), "GEMM kernel '" + kernel.name + "' does not take " + name_of(args.dtype));
    check(kernel.available(), "GEMM kernel '" + kernel.name + "' needs " + kernel.needs +
                                  ", which this CPU lacks (see `gradlab info`)");
    kernel.fn(args);
}

void lowp_gemm(const LowpGemmArgs& args) { best_lowp_gemm(args.dtype).fn(args); }

}  // namespace gl::kernels
