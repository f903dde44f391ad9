#include "base/error.hpp"
#include "kernels/gemm_lowp.hpp"

namespace gl::kernels {

const std::vector<LowpGemmKernel>& lowp_gemm_kernels() {
    // Slowest idea first; best_lowp_gemm() picks the last one that can run.
    static const std::vector<LowpGemmKernel> kernels = {gemm_lowp_naive_kernel(), gemm_lowp_convert_kernel(),
                                                        gemm_fp16_avx512fp16_kernel(), gemm_bf16_avx512_kernel(),
                                                        gemm_bf16_amx_kernel()};
    return kernels;
}

const LowpGemmKernel& find_lowp_gemm(const std::string& name) {
    std::string known;
    for (const auto& k : lowp_gemm_kernels()) {
        if (k.name == name) return k;
        known += (known.empty() ? "" : ", ") + k.name;
    }
    throw Error("unknown low-precision GEMM kernel '" + name + "'; known kernels: " + known);
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
