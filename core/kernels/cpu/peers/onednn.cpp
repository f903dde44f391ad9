// oneDNN as a GEMM peer (dnnl_sgemm): Intel's deep-learning library, whose GEMM is
// generated at run time (JIT) for the exact CPU, so the teaching kernels can be measured
// against it in the same run. Registered only when the build found oneDNN (libdnnl-dev).
#include "kernels/cpu/peers/peers.hpp"

#if GRADLAB_HAVE_ONEDNN
#include <dlfcn.h>

#include <algorithm>
#include <dnnl.h>
#include <dnnl.hpp>
#include <map>
#include <tuple>

#include "base/error.hpp"
#include "parallel/thread_pool.hpp"
#endif

namespace gl::kernels {

#if GRADLAB_HAVE_ONEDNN
namespace {

// Debian's oneDNN runs on OpenMP threads. Set their number to gl::get_num_threads()
// through the OpenMP runtime oneDNN already loaded (looked up by name, so gradlab itself
// needs no OpenMP).
void sync_threads() {
    using SetFn = void (*)(int);
    static const SetFn set = reinterpret_cast<SetFn>(dlsym(RTLD_DEFAULT, "omp_set_num_threads"));
    thread_local int last = -1;
    const int n = get_num_threads();
    if (set && n != last) set(n);
    last = n;
}

void sgemm_onednn(const GemmArgs<float>& g) {
    if (g.M == 0 || g.N == 0) return;  // oneDNN refuses empty matrices as invalid arguments
    if (g.K == 0) {
        for (std::int64_t i = 0; i < g.M; ++i) std::fill(g.C + i * g.ldc, g.C + i * g.ldc + g.N, 0.0f);
        return;
    }
    const UnpinnedScope unpinned;  // oneDNN's OpenMP threads must not inherit our pinned caller's one CPU
    sync_threads();
    // dnnl_sgemm is row-major, like GemmArgs.
    const dnnl_status_t s = dnnl_sgemm(g.trans_a ? 'T' : 'N', g.trans_b ? 'T' : 'N', g.M, g.N, g.K, 1.0f, g.A,
                                       g.lda, g.B, g.ldb, 0.0f, g.C, g.ldc);
    check(s == dnnl_success, "gemm onednn: dnnl_sgemm failed with status " + std::to_string(static_cast<int>(s)));
}

// INT8: C = (A - ao)(op(B) - bo), INT32 out. oneDNN takes the zero points as bytes of the
// operands' own types, which is the range they live in anyway.
void gemm_int8_onednn(const Int8GemmArgs& g) {
    check(g.requant == nullptr, "gemm int8_onednn: dnnl_gemm_u8s8s32 writes INT32 only (no fused requantization)");
    if (g.M == 0 || g.N == 0) return;
    if (g.K == 0) {  // oneDNN refuses an empty K as invalid arguments; the sum is empty
        for (std::int64_t i = 0; i < g.M; ++i) std::fill(g.C + i * g.ldc, g.C + i * g.ldc + g.N, 0);
        return;
    }
    const UnpinnedScope unpinned;
    sync_threads();
    const std::int32_t zero = 0;
    const dnnl_status_t s = dnnl_gemm_u8s8s32('N', g.trans_b ? 'T' : 'N', 'F', g.M, g.N, g.K, 1.0f, g.A, g.lda,
                                              static_cast<std::uint8_t>(g.a_zero_point), g.B, g.ldb,
                                              static_cast<std::int8_t>(g.b_zero_point), 0.0f, g.C, g.ldc, &zero);
    check(s == dnnl_success, "gemm int8_onednn: dnnl_gemm_u8s8s32 failed with status " +
                                 std::to_string(static_cast<int>(s)));
}

// The same product through oneDNN's matmul primitive (what a framework calls: its INT8
// path runs on the brgemm kernels where the CPU has VNNI, not on dnnl_gemm_u8s8s32), with
// the operands in their plain layouts and the zero points given at run time. A primitive
// is generated (JIT) once per shape, strides and thread count and kept, as a framework
// keeps it: only its execution is timed.
struct MatmulPrimitive {
    dnnl::matmul primitive;
    dnnl::memory::desc a, b, c;
};

const MatmulPrimitive& matmul_for(const dnnl::engine& engine, const Int8GemmArgs& g) {
    using dt = dnnl::memory::data_type;
    // The thread count is part of the key: oneDNN fixes a primitive's threads when it is
    // created, so one made for 1 thread would run on 1 thread when 2 are asked for.
    using Key = std::tuple<std::int64_t, std::int64_t, std::int64_t, std::int64_t, std::int64_t, std::int64_t, bool, int>;
    thread_local std::map<Key, MatmulPrimitive> cache;
    const Key key{g.M, g.N, g.K, g.lda, g.ldb, g.ldc, g.trans_b, get_num_threads()};
    if (auto it = cache.find(key); it != cache.end()) return it->second;
    const dnnl::memory::desc a({g.M, g.K}, dt::u8, dnnl::memory::dims{g.lda, 1});
    const dnnl::memory::desc b({g.K, g.N}, dt::s8, g.trans_b ? dnnl::memory::dims{1, g.ldb} : dnnl::memory::dims{g.ldb, 1});
    const dnnl::memory::desc c({g.M, g.N}, dt::s32, dnnl::memory::dims{g.ldc, 1});
    dnnl::primitive_attr attr;
    attr.set_zero_points(DNNL_ARG_SRC, 0, {DNNL_RUNTIME_S32_VAL});
    attr.set_zero_points(DNNL_ARG_WEIGHTS, 0, {DNNL_RUNTIME_S32_VAL});
    const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a, b, c), attr, engine);
    return cache.emplace(key, MatmulPrimitive{dnnl::matmul(pd), a, b, c}).first->second;
}

void gemm_int8_onednn_matmul(const Int8GemmArgs& g) {
    check(g.requant == nullptr, "gemm int8_onednn_matmul: the peer writes INT32 only (no fused requantization)");
    if (g.M == 0 || g.N == 0) return;
    if (g.K == 0) {  // oneDNN refuses an empty K; the sum is empty
        for (std::int64_t i = 0; i < g.M; ++i) std::fill(g.C + i * g.ldc, g.C + i * g.ldc + g.N, 0);
        return;
    }
    const UnpinnedScope unpinned;
    sync_threads();
    static const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
    const MatmulPrimitive& mm = matmul_for(engine, g);
    dnnl::stream stream(engine);
    const dnnl::memory::desc zero_md({1}, dnnl::memory::data_type::s32, dnnl::memory::dims{1});
    std::int32_t za = g.a_zero_point, zb = g.b_zero_point;
    mm.primitive.execute(stream, {{DNNL_ARG_SRC, dnnl::memory(mm.a, engine, const_cast<std::uint8_t*>(g.A))},
                                  {DNNL_ARG_WEIGHTS, dnnl::memory(mm.b, engine, const_cast<std::int8_t*>(g.B))},
                                  {DNNL_ARG_DST, dnnl::memory(mm.c, engine, g.C)},
                                  {DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC, dnnl::memory(zero_md, engine, &za)},
                                  {DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_WEIGHTS, dnnl::memory(zero_md, engine, &zb)}});
    stream.wait();
}

bool always() { return true; }

}  // namespace

std::optional<Int8GemmKernel> gemm_int8_onednn_matmul_kernel() {
    return Int8GemmKernel{"int8_onednn_matmul",
                          "oneDNN's matmul primitive, u8 x s8 -> s32, plain layouts, primitive kept per shape (peer library)",
                          "", &always, &gemm_int8_onednn_matmul, true};
}

std::optional<Int8GemmKernel> gemm_int8_onednn_kernel() {
    return Int8GemmKernel{"int8_onednn", "oneDNN dnnl_gemm_u8s8s32, JIT-generated for this CPU (peer library)", "",
                          &always, &gemm_int8_onednn, true};
}

std::optional<GemmKernel> gemm_onednn_kernel() {
    return GemmKernel{"onednn", "oneDNN dnnl_sgemm, JIT-generated for this CPU (peer library)", &sgemm_onednn,
                      nullptr};
}
#else
std::optional<GemmKernel> gemm_onednn_kernel() { return std::nullopt; }
std::optional<Int8GemmKernel> gemm_int8_onednn_kernel() { return std::nullopt; }
std::optional<Int8GemmKernel> gemm_int8_onednn_matmul_kernel() { return std::nullopt; }
#endif

}  // namespace gl::kernels
