// The CUDA INT8 GEMMs (claim Q-1) and the runtime pieces they need: __dp4a byte by byte,
// the CPU runtime's WMMA (the same tiles as a loop, warp-wide calls enforced), and both
// INT8 kernels, exact against an int64 loop on odd shapes and at the extremes of int8, on
// the CPU runtime and, when there is one, on a GPU.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "cuda_cpu/cuda_compat.hpp"
#include "cuda_cpu/wmma.hpp"
#include "cuda_error_of.hpp"
#include "device_vector.hpp"
#include "kernels/cuda/igemm.hpp"
#include "kernels/cuda/lowp.hpp"
#include "numerics/convert.hpp"
#include "testkit/gemm_oracle.hpp"
#include "testkit/random.hpp"
#if GRADLAB_HAVE_CUDA
#include "cuda_cpu/device_status.hpp"
#endif

namespace {

using gl::kernels::CudaIgemm;

// ---------------------------------------------------------------------------------------
// __dp4a

/// Four bytes, byte 0 least significant (the order of four int8 values in memory).
constexpr std::uint32_t word(int b0, int b1, int b2, int b3) {
    return std::uint32_t(std::uint8_t(b0)) | std::uint32_t(std::uint8_t(b1)) << 8 |
           std::uint32_t(std::uint8_t(b2)) << 16 | std::uint32_t(std::uint8_t(b3)) << 24;
}

TEST(CudaDp4a, SignedBytesMultiplyPairwiseAndAddToTheAccumulator) {
    const int a = static_cast<int>(word(1, -2, 3, -4)), b = static_cast<int>(word(5, 6, -7, -8));
    EXPECT_EQ(__dp4a(a, b, 100), 100 + 5 - 12 - 21 + 32);
    // The extremes: -128 * -128 four times is 65536; -128 * 127 four times is -65024.
    const int min4 = static_cast<int>(word(-128, -128, -128, -128)), max4 = static_cast<int>(word(127, 127, 127, 127));
    EXPECT_EQ(__dp4a(min4, min4, 0), 65536);
    EXPECT_EQ(__dp4a(min4, max4, -1), -65024 - 1);
}

TEST(CudaDp4a, UnsignedBytesReadTheSameBitsAsZeroTo255) {
    const unsigned a = word(255, 0, 128, 1), b = word(255, 9, 2, 200);
    EXPECT_EQ(__dp4a(a, b, 7u), 7u + 255u * 255u + 0u + 256u + 200u);
}

TEST(CudaDp4a, TheSumWrapsModulo2To32AsOnTheGpu) {
    const int min4 = static_cast<int>(word(-128, -128, -128, -128));
    EXPECT_EQ(__dp4a(min4, min4, std::numeric_limits<int>::max()), std::numeric_limits<int>::min() + 65535);
}

// ---------------------------------------------------------------------------------------
// WMMA on the CPU runtime

std::vector<std::uint16_t> random_half(std::size_t n, unsigned seed) {
    return gl::testkit::random_16bit(gl::DType::Float16, n, seed, -2.0, 2.0);
}

std::vector<float> as_floats(const std::vector<std::uint16_t>& bits) {
    std::vector<float> out(bits.size());
    for (std::size_t i = 0; i < bits.size(); ++i) out[i] = gl::half_bits_to_float(bits[i]);
    return out;
}

TEST(CudaWmmaCpu, HalfGemmMatchesAnFp32AccumulatedLoop) {
    for (auto [M, N, K] : {std::array<int, 3>{16, 16, 16}, {70, 33, 100}, {64, 80, 48}}) {
        const auto A = random_half(std::size_t(M) * K, 5), B = random_half(std::size_t(K) * N, 6);
        std::vector<float> C(std::size_t(M) * N, NAN);
        gl::kernels::cuda_hgemm_wmma(M, N, K, A.data(), B.data(), C.data());
        // The FP16 inputs are exact in float, so the FP32 oracle sees the same numbers.
        const gl::testkit::GemmShape shape{M, N, K};
        const auto ref = gl::testkit::reference_gemm(shape, as_floats(A), as_floats(B));
        EXPECT_EQ(gl::testkit::mismatches(shape, C, ref), "") << gl::testkit::shape_name(shape);
    }
}

// Lanes 16-31 leave before the warp-wide fill: on a GPU that is undefined behaviour; here
// the call waits for the whole warp, which never comes, and the launch says where.
__global__ void wmma_with_half_a_warp(float* out) {
    if (threadIdx.x >= 16) return;
    nvcuda::wmma::fragment<nvcuda::wmma::accumulator, 16, 16, 16, float> acc;
    nvcuda::wmma::fill_fragment(acc, 1.0f);
    nvcuda::wmma::store_matrix_sync(out, acc, 16, nvcuda::wmma::mem_row_major);
}

TEST(CudaWmmaCpu, ACallWithoutTheWholeWarpIsReportedNotSilentlyComputed) {
    gl::test::DeviceVector<float> out(256);
    const std::string msg = gl::test::error_of(
        [&] { gl::cuda::launch(wmma_with_half_a_warp, dim3(1), dim3(32), 0, out.get()); },
        gl::cuda::ErrorCode::barrier_divergence);
    EXPECT_NE(msg.find("threads 0-15: wait at __syncwarp"), std::string::npos) << msg;
    EXPECT_NE(msg.find("test_cuda_igemm.cpp:"), std::string::npos) << msg;  // the kernel's line, not wmma.hpp's
    EXPECT_NE(msg.find("threads 16-31: exited"), std::string::npos) << msg;
}

TEST(CudaWmmaCpu, ElementWiseCodeOverTheFragmentSeesEveryElementOnce) {
    nvcuda::wmma::fragment<nvcuda::wmma::accumulator, 16, 16, 16, int> acc;
    static_assert(decltype(acc)::num_elements == 256, "every lane holds the whole tile here");
    for (int i = 0; i < acc.num_elements; ++i) acc.x[i] = i;
    EXPECT_EQ(acc.at(3, 5), 3 * 16 + 5);
}

// ---------------------------------------------------------------------------------------
// The INT8 GEMMs

/// C = A B^T exactly, in int64 (A is M x K, B is N x K).
std::vector<std::int64_t> reference_igemm(int M, int N, int K, const std::vector<std::int8_t>& A,
                                          const std::vector<std::int8_t>& B) {
    std::vector<std::int64_t> C(std::size_t(M) * N, 0);
    for (int i = 0; i < M; ++i)
        for (int j = 0; j < N; ++j)
            for (int k = 0; k < K; ++k)
                C[std::size_t(i) * N + j] += std::int64_t(A[std::size_t(i) * K + k]) * B[std::size_t(j) * K + k];
    return C;
}

std::vector<std::int8_t> random_int8(std::size_t n, unsigned seed) {
    std::mt19937 rng(seed);
    std::uniform_int_distribution<int> value(-128, 127);
    std::vector<std::int8_t> v(n);
    for (auto& x : v) x = static_cast<std::int8_t>(value(rng));
    return v;
}

/// "" when C equals the reference, else the first difference.
std::string first_difference(int N, const std::vector<std::int32_t>& C, const std::vector<std::int64_t>& ref) {
    for (std::size_t i = 0; i < C.size(); ++i)
        if (C[i] != ref[i])
            return "C(" + std::to_string(i / N) + ", " + std::to_string(i % N) + ") = " + std::to_string(C[i]) +
                   ", want " + std::to_string(ref[i]);
    return "";
}

// Shapes: one tile; odd sizes (padding in every dimension, partial blocks); K not a multiple
// of 4 (the dp4a word); K longer than one shared-memory step (64 values).
constexpr std::array<std::array<int, 3>, 5> kShapes{{{16, 16, 16}, {1, 1, 1}, {33, 17, 70}, {37, 50, 3}, {64, 48, 200}}};
constexpr CudaIgemm kKernels[] = {CudaIgemm::dp4a, CudaIgemm::wmma};

using RunIgemm = void (*)(CudaIgemm, int, int, int, const std::int8_t*, const std::int8_t*, std::int32_t*);

void expect_exact_on_every_shape(RunIgemm run) {
    for (CudaIgemm kernel : kKernels)
        for (auto [M, N, K] : kShapes) {
            const auto A = random_int8(std::size_t(M) * K, 11), B = random_int8(std::size_t(N) * K, 12);
            std::vector<std::int32_t> C(std::size_t(M) * N, -1);
            run(kernel, M, N, K, A.data(), B.data(), C.data());
            EXPECT_EQ(first_difference(N, C, reference_igemm(M, N, K, A, B)), "")
                << gl::kernels::name_of(kernel) << " at M=" << M << " N=" << N << " K=" << K;
        }
}

// All -128: every product is +16384, the largest; the sums reach 16384 K (K = 1000 here),
// which int32 holds exactly.
void expect_exact_at_the_extremes(RunIgemm run) {
    const int M = 20, N = 18, K = 1000;
    const std::vector<std::int8_t> A(std::size_t(M) * K, -128), B(std::size_t(N) * K, -128);
    for (CudaIgemm kernel : kKernels) {
        std::vector<std::int32_t> C(std::size_t(M) * N, -1);
        run(kernel, M, N, K, A.data(), B.data(), C.data());
        EXPECT_EQ(first_difference(N, C, reference_igemm(M, N, K, A, B)), "") << gl::kernels::name_of(kernel);
    }
}

TEST(CudaIgemm, BothKernelsAreExactOnOddShapes) { expect_exact_on_every_shape(gl::kernels::cuda_igemm); }

TEST(CudaIgemm, BothKernelsAreExactAtTheExtremesOfInt8) { expect_exact_at_the_extremes(gl::kernels::cuda_igemm); }

TEST(CudaIgemm, EmptyAndNegativeSizes) {
    const std::vector<std::int8_t> a(16, 3);  // room for a 4 x 4 operand: the sizes below read at most that
    for (CudaIgemm kernel : kKernels) {
        std::vector<std::int32_t> C(4, 7);
        gl::kernels::cuda_igemm(kernel, 0, 4, 4, a.data(), a.data(), C.data());  // nothing to compute
        EXPECT_EQ(C, std::vector<std::int32_t>(4, 7));
        gl::kernels::cuda_igemm(kernel, 2, 2, 0, a.data(), a.data(), C.data());  // K = 0: empty sums
        EXPECT_EQ(C, std::vector<std::int32_t>(4, 0));
        EXPECT_THROW(gl::kernels::cuda_igemm(kernel, -1, 2, 2, a.data(), a.data(), C.data()), gl::Error);
    }
}

TEST(CudaIgemmDevice, BothKernelsAreExactOnOddShapesOnTheGpu) {
#if !GRADLAB_HAVE_CUDA
    GTEST_SKIP() << "needs a CUDA device: this build has no CUDA (nvcc was not found when meson configured it)";
#else
    const gl::cuda::DeviceStatus status = gl::cuda::device_status();
    if (!status.available) GTEST_SKIP() << "needs a CUDA device: " << status.message;
    expect_exact_on_every_shape(gl::kernels::cuda_igemm_device_from_host);
    expect_exact_at_the_extremes(gl::kernels::cuda_igemm_device_from_host);
#endif
}

}  // namespace
