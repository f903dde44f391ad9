// The CUDA SGEMM family behind the GEMM registry (core/kernels/cuda/gemm_cuda.cpp). Kernel
// "cuda_cpu" runs the best CUDA version on the CPU runtime: with it, matmul handles strides
// and transposes, and a training step's loss and gradients equal those of the naive loop,
// so autograd needs no change to run on the CUDA kernels. Kernel "cuda" does the same on a
// GPU when there is one; when there is none, choosing it fails with the driver's reason.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "cuda_cpu/error.hpp"
#include "kernels/gemm.hpp"
#include "ops/ops.hpp"
#include "testkit/random.hpp"
#include "training_step.hpp"
#if GRADLAB_HAVE_CUDA
#include "cuda_cpu/device_status.hpp"
#endif

namespace gl {
namespace {

using test::ScopedGemm;

/// op(A) is M x K and op(B) is K x N; every matrix is stored with 3 spare floats per row.
struct Strided {
    int M, N, K;
    bool ta, tb;
};

/// C through kernel @p name; the padding of C must stay untouched.
std::vector<float> run(const std::string& name, const Strided& p, const std::vector<float>& A,
                       const std::vector<float>& B) {
    constexpr int pad = 3;
    std::vector<float> C(std::size_t(p.M) * (p.N + pad), -7.0f);
    const auto g = kernels::dense_gemm_args(p.ta, p.tb, p.M, p.N, p.K, A.data(), B.data(), C.data(), pad);
    kernels::find_gemm(name).sgemm(g);
    return C;
}

TEST(CudaMatmul, CpuRuntimeKernelHandlesStridesAndTransposes) {
    for (const Strided& p : {Strided{17, 33, 9, false, false}, Strided{31, 7, 65, true, false},
                             Strided{64, 10, 40, false, true}, Strided{5, 129, 3, true, true}}) {
        const auto A = testkit::random_floats(std::size_t(p.M + 3) * (p.K + 3), 1);  // big enough either way
        const auto B = testkit::random_floats(std::size_t(p.K + 3) * (p.N + 3), 2);
        const auto expected = run("naive", p, A, B);
        const auto got = run("cuda_cpu", p, A, B);
        for (std::size_t i = 0; i < got.size(); ++i)
            ASSERT_NEAR(got[i], expected[i], 1e-5 * std::sqrt(double(p.K)))
                << "M=" << p.M << " N=" << p.N << " K=" << p.K << " ta=" << p.ta << " tb=" << p.tb
                << " at " << i << (i % std::size_t(p.N + 3) >= std::size_t(p.N) ? " (padding of C)" : "");
    }
}

TEST(CudaMatmul, EmptySumGivesZeros) {
    ScopedGemm use("cuda_cpu");
    const Tensor c = matmul(empty({3, 0}, DType::Float32), empty({0, 2}, DType::Float32));
    EXPECT_EQ(c.to_vector<float>(), std::vector<float>(6, 0.0f));
}

TEST(CudaMatmul, TrainingStepThroughTheCudaKernelMatchesTheNaiveLoop) {
    // Forward (x W1^T: a transposed weight) and backward (both operands transposed) all
    // go through the registry: autograd does not know which kernel ran.
    EXPECT_EQ(test::step_differences("cuda_cpu"), "");
}

/// Whether a GPU is here, and if not, why (the message the "cuda" kernel must show).
std::string why_no_gpu() {
#if GRADLAB_HAVE_CUDA
    const cuda::DeviceStatus status = cuda::device_status();
    return status.available ? std::string() : status.message;
#else
    return "this build has no CUDA";
#endif
}

TEST(CudaMatmul, DeviceKernelWithoutAGpuSaysWhy) {
    const std::string why = why_no_gpu();
    if (why.empty()) GTEST_SKIP() << "a GPU is here: CudaMatmul.DeviceKernel* runs on it instead";
    const kernels::GemmKernel& k = kernels::find_gemm("cuda");
    EXPECT_NE(kernels::why_unavailable(k).find(why), std::string::npos) << kernels::why_unavailable(k);
    try {
        kernels::set_default_gemm("cuda");
        ADD_FAILURE() << "choosing the cuda kernel without a GPU must fail";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("'cuda' cannot run here"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
    }
    EXPECT_NE(kernels::default_gemm().name, "cuda");
    // Called directly, the kernel throws gl::cuda's no_device error.
    float x = 1.0f;
    kernels::GemmArgs<float> g{false, false, 1, 1, 1, &x, 1, &x, 1, &x, 1};
    try {
        k.sgemm(g);
        ADD_FAILURE() << "the cuda kernel ran without a GPU";
    } catch (const cuda::Error& e) {
        EXPECT_EQ(e.code(), cuda::ErrorCode::no_device) << e.what();
    }
}

TEST(CudaMatmul, DeviceKernelTrainingStepMatchesTheNaiveLoop) {
    if (const std::string why = why_no_gpu(); !why.empty()) GTEST_SKIP() << "needs a CUDA device: " << why;
    EXPECT_EQ(test::step_differences("cuda"), "");
}

}  // namespace
}  // namespace gl
