// The INT8 GEMM registry: our paths in the order of kernels/cpu/int8/paths.hpp, then the
// peer libraries the build found; fixed after start-up.
#include "base/error.hpp"
#include "kernels/cpu/int8/pack.hpp"
#include "kernels/cpu/int8/paths.hpp"
#include "kernels/cpu/peers/peers.hpp"
#include "kernels/gemm_int8.hpp"
#include "kernels/kernel_table.hpp"

namespace gl::kernels {

const std::vector<Int8GemmKernel>& int8_gemm_kernels() {
    static const std::vector<Int8GemmKernel> kernels = [] {
        std::vector<Int8GemmKernel> all = cpu_int8_gemm_paths();
        if (auto peer = gemm_int8_onednn_kernel()) all.push_back(*peer);
        if (auto peer = gemm_int8_onednn_matmul_kernel()) all.push_back(*peer);
        return all;
    }();
    return kernels;
}

const Int8GemmKernel& find_int8_gemm(const std::string& name) {
    return find_named_or_throw(int8_gemm_kernels(), name, "INT8 GEMM kernel");
}

const Int8GemmKernel& best_int8_gemm() {
    const auto& all = int8_gemm_kernels();
    for (auto k = all.rbegin(); k != all.rend(); ++k)
        if (!k->peer && k->available()) return *k;
    throw Error("no INT8 GEMM kernel can run here");  // unreachable: the portable path always can
}

Int8PackedB pack_int8_weights(const Int8GemmKernel& kernel, const Int8GemmArgs& args) {
    if (kernel.pack_width == 0) return {};
    const std::int64_t kp = int8::round_up(std::max<std::int64_t>(args.K, 1), kernel.pack_k_align);
    return int8::pack_b(args, kernel.pack_width, kp);
}

void run_int8_gemm(const Int8GemmKernel& kernel, const Int8GemmArgs& args) {
    check(kernel.available(), "INT8 GEMM kernel '" + kernel.name + "' needs " + kernel.needs +
                                  ", which this CPU lacks (see `gradlab info`)");
    kernel.fn(args);
}

void int8_gemm(const Int8GemmArgs& args) { best_int8_gemm().fn(args); }

}  // namespace gl::kernels
