// The FP32 GEMM registry: one table, assembled from the kernel families in the order a
// reader meets them (our versions, the peer libraries, the CUDA family), then open to
// kernels registered at run time (Lab 03 adds the student's CUDA kernel).
#include <mutex>

#include "base/error.hpp"
#include "kernels/cpu/peers/peers.hpp"
#include "kernels/cpu/sgemm/sgemm.hpp"
#include "kernels/cuda/sgemm.hpp"
#include "kernels/gemm.hpp"
#include "kernels/kernel_table.hpp"

namespace gl::kernels {
namespace {

struct Registry {
    std::mutex mutex;
    std::vector<GemmKernel> kernels;
    std::string default_name;
};

Registry& registry() {
    static Registry r;
    static std::once_flag once;
    std::call_once(once, [] {
        append_family(r.kernels, cpu_sgemm_versions());  // 1 naive ... 5 threaded, 6 small, 7 medium
        append_family(r.kernels, cpu_gemm_peers());      // Eigen, and OpenBLAS, oneDNN if found
        // The CUDA SGEMM family, chosen by name only: "cuda" needs a GPU, and "cuda_cpu"
        // runs the same kernel on the CPU runtime, correct but slow.
        append_family(r.kernels, cuda_gemm_kernels());
        // Our fastest CPU version at every shape: 6 for small problems, its own stripes for
        // medium ones, 5 for large.
        r.default_name = "medium";
    });
    return r;
}

}  // namespace

void register_gemm(const GemmKernel& kernel) {
    check(kernel.sgemm != nullptr, "register_gemm: kernel '" + kernel.name + "' has no float32 entry");
    Registry& r = registry();
    std::lock_guard lock(r.mutex);
    if (GemmKernel* k = find_named(r.kernels, kernel.name))
        *k = kernel;
    else
        r.kernels.push_back(kernel);
}

const GemmKernel& find_gemm(const std::string& name) {
    Registry& r = registry();
    std::lock_guard lock(r.mutex);
    return find_named_or_throw(r.kernels, name, "GEMM kernel");
}

std::vector<GemmKernel> gemm_kernels() {
    Registry& r = registry();
    std::lock_guard lock(r.mutex);
    return r.kernels;
}

std::string why_unavailable(const GemmKernel& kernel) {
    return kernel.why_unavailable ? kernel.why_unavailable() : std::string();
}

void set_default_gemm(const std::string& name) {
    const std::string why = why_unavailable(find_gemm(name));  // find_gemm throws for an unknown name
    check(why.empty(), "GEMM kernel '" + name + "' cannot run here: " + why +
                           "; choose another (gradlab info lists them)");
    Registry& r = registry();
    std::lock_guard lock(r.mutex);
    r.default_name = name;
}

const GemmKernel& default_gemm() {
    Registry& r = registry();
    std::string name;
    {
        std::lock_guard lock(r.mutex);
        name = r.default_name;
    }
    return find_gemm(name);
}

void gemm(const GemmArgs<float>& args) { default_gemm().sgemm(args); }

void gemm(const GemmArgs<double>& args) {
    const GemmKernel& k = default_gemm();
    (k.dgemm ? k.dgemm : find_gemm("naive").dgemm)(args);
}

}  // namespace gl::kernels
