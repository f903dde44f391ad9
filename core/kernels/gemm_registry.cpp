#include <mutex>

#include "base/error.hpp"
#include "kernels/gemm.hpp"

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
        // The teaching kernels in the order they add ideas, then the peer libraries
        // found at build time. The default is our fastest, the threaded packed kernel.
        r.kernels = {gemm_naive_kernel(), gemm_reordered_kernel(), gemm_blocked_kernel(),
                     gemm_packed_simd_kernel(), gemm_threaded_kernel(), gemm_eigen_kernel()};
        for (const auto& peer : {gemm_openblas_kernel(), gemm_onednn_kernel()})
            if (peer) r.kernels.push_back(*peer);
        r.default_name = "threaded";
        // The CUDA SGEMM family, chosen by name only: "cuda" needs a GPU, and "cuda_cpu"
        // runs the same kernel on the CPU runtime, correct but slow.
        r.kernels.push_back(gemm_cuda_cpu_kernel());
        r.kernels.push_back(gemm_cuda_kernel());
    });
    return r;
}

const GemmKernel* find_locked(Registry& r, const std::string& name) {
    for (const auto& k : r.kernels)
        if (k.name == name) return &k;
    return nullptr;
}

}  // namespace

void register_gemm(const GemmKernel& kernel) {
    check(kernel.sgemm != nullptr, "register_gemm: kernel '" + kernel.name + "' has no float32 entry");
    Registry& r = registry();
    std::lock_guard lock(r.mutex);
    for (auto& k : r.kernels)
        if (k.name == kernel.name) {
            k = kernel;
            return;
        }
    r.kernels.push_back(kernel);
}

const GemmKernel& find_gemm(const std::string& name) {
    Registry& r = registry();
    std::lock_guard lock(r.mutex);
    if (const GemmKernel* k = find_locked(r, name)) return *k;
    std::string known;
    for (const auto& k : r.kernels) known += (known.empty() ? "" : ", ") + k.name;
    throw Error("unknown GEMM kernel '" + name + "'; known kernels: " + known);
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
