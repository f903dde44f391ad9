// The 16-bit CUDA kernels: axpy on half and bfloat16 storage on the CPU runtime, bit for
// bit against the CPU kernels (same FMA, same rounding); on a GPU when there is one, the
// same for half, and the WMMA tensor-core GEMM against an FP32-accumulated loop.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <random>
#include <vector>

#include "kernels/cpu/elementwise_lowp.hpp"
#include "kernels/cuda/lowp.hpp"
#include "numerics/convert.hpp"
#include "testkit/gemm_oracle.hpp"
#include "testkit/random.hpp"
#if GRADLAB_HAVE_CUDA
#include "cuda_cpu/device_status.hpp"
#endif

namespace {

std::vector<std::uint16_t> random_16bit(gl::DType dtype, std::size_t n, unsigned seed) {
    return gl::testkit::random_16bit(dtype, n, seed, -2.0, 2.0);
}

TEST(CudaLowp, AxpyOnTheCpuRuntimeMatchesTheCpuKernelsBitForBit) {
    const int n = 1000;  // not a multiple of the block: the last block is partial
    for (gl::DType dtype : {gl::DType::Float16, gl::DType::BFloat16}) {
        const auto x = random_16bit(dtype, n, 1);
        auto y_cuda = random_16bit(dtype, n, 2);
        auto y_cpu = y_cuda;
        if (dtype == gl::DType::Float16) {
            gl::kernels::cuda_axpy_half(n, 0.75f, x.data(), y_cuda.data());
            gl::kernels::axpy_f16(n, 0.75f, x.data(), y_cpu.data());
        } else {
            gl::kernels::cuda_axpy_bf16(n, 0.75f, x.data(), y_cuda.data());
            gl::kernels::axpy_bf16(n, 0.75f, x.data(), y_cpu.data());
        }
        EXPECT_EQ(y_cuda, y_cpu) << gl::name_of(dtype);
    }
}

#if GRADLAB_HAVE_CUDA
bool have_device(std::string& why) {
    const gl::cuda::DeviceStatus status = gl::cuda::device_status();
    why = status.message;
    return status.available;
}
#endif

TEST(CudaLowpDevice, AxpyHalfMatchesTheCpuKernel) {
#if !GRADLAB_HAVE_CUDA
    GTEST_SKIP() << "needs a CUDA device: this build has no CUDA (nvcc was not found when meson configured it)";
#else
    std::string why;
    if (!have_device(why)) GTEST_SKIP() << "needs a CUDA device: " << why;
    const int n = 100003;
    const auto x = random_16bit(gl::DType::Float16, n, 3);
    auto y_gpu = random_16bit(gl::DType::Float16, n, 4);
    auto y_cpu = y_gpu;
    gl::kernels::cuda_axpy_half_device_from_host(n, -1.5f, x.data(), y_gpu.data());
    gl::kernels::axpy_f16(n, -1.5f, x.data(), y_cpu.data());
    EXPECT_EQ(y_gpu, y_cpu);
#endif
}

TEST(CudaLowpDevice, WmmaGemmMatchesAnFp32AccumulatedLoop) {
#if !GRADLAB_HAVE_CUDA
    GTEST_SKIP() << "needs a CUDA device: this build has no CUDA (nvcc was not found when meson configured it)";
#else
    std::string why;
    if (!have_device(why)) GTEST_SKIP() << "needs a CUDA device: " << why;
    for (auto [M, N, K] : {std::array<int, 3>{16, 16, 16}, {70, 33, 100}, {256, 128, 512}}) {
        const auto A = random_16bit(gl::DType::Float16, std::size_t(M) * K, 5);
        const auto B = random_16bit(gl::DType::Float16, std::size_t(K) * N, 6);
        std::vector<float> C(std::size_t(M) * N, NAN);
        gl::kernels::cuda_hgemm_wmma_device_from_host(M, N, K, A.data(), B.data(), C.data());
        // The FP16 inputs are exact in float, so the FP32 oracle sees the same numbers.
        const auto as_floats = [](const std::vector<std::uint16_t>& bits) {
            std::vector<float> out(bits.size());
            for (std::size_t i = 0; i < bits.size(); ++i) out[i] = gl::half_bits_to_float(bits[i]);
            return out;
        };
        const gl::testkit::GemmShape shape{M, N, K};
        const auto ref = gl::testkit::reference_gemm(shape, as_floats(A), as_floats(B));
        EXPECT_EQ(gl::testkit::mismatches(shape, C, ref), "") << gl::testkit::shape_name(shape);
    }
#endif
}

}  // namespace
