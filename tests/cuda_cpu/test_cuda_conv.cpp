// Tests of the CUDA convolution family (core/kernels/cuda/conv.cuh): every version and
// every pass on the CPU runtime against the CPU direct convolution computed in double, on
// odd shapes (strides, padding, dilation, groups, depthwise, non-square filters), under
// thread orders that would expose a missing __syncthreads; and the same on a GPU when
// there is one.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "cuda_cpu/cpu_runtime.hpp"
#include "device_vector.hpp"
#include "kernels/cuda/conv.hpp"
#include "testkit/conv_problems.hpp"
#if GRADLAB_HAVE_CUDA
#include "cuda_cpu/device_status.hpp"
#endif

namespace {

namespace kc = gl::kernels::conv;
using gl::cuda::cpu::Order;
using gl::cuda::cpu::Schedule;
using gl::testkit::max_relative_error;
using gl::testkit::random_values;
using kc::ConvPass;
constexpr auto geom = gl::testkit::conv_geometry;

// N C H W -> K R S, stride, padding, dilation, groups: odd planes, every option, and
// sizes past one 16 x 16 tile of the implicit GEMM in rows, columns and depth.
std::vector<kc::ConvGeometry> shapes() {
    std::vector<kc::ConvGeometry> grid = {
        geom(2, 3, 7, 9, 4, 3, 3, 1, 1, 1, 1),    // odd planes, same padding
        geom(1, 2, 5, 5, 3, 3, 3, 1, 0, 1, 1),    // valid
        geom(2, 4, 11, 6, 6, 3, 3, 1, 2, 1, 2),   // groups 2, padding 2
        geom(1, 6, 9, 9, 6, 3, 3, 1, 1, 1, 6),    // depthwise
        geom(2, 3, 9, 8, 5, 3, 3, 2, 1, 1, 1),    // stride 2
        geom(1, 2, 10, 9, 3, 3, 3, 1, 2, 2, 1),   // dilation 2
        geom(2, 3, 8, 7, 4, 5, 3, 1, 2, 1, 1),    // 5x3 filter
        geom(2, 5, 13, 13, 7, 3, 3, 3, 0, 1, 1),  // stride 3
        geom(1, 9, 6, 5, 19, 3, 3, 1, 1, 1, 1),   // 19 filters, depth 81: two tiles of rows, six of depth
    };
    grid[4].stride_w = 1;  // a different stride across than down
    grid[2].pad_w = 1;     // and padding
    return grid;
}

std::string pass_label(ConvPass pass) { return kc::pass_name(pass); }

// Sizes of the (a, b, out) operands of a pass.
struct Operands {
    std::vector<float> a, b;
    std::int64_t out;
};
Operands operands(ConvPass pass, const kc::ConvGeometry& g) {
    const std::int64_t x = g.input_size(), w = g.weight_size(), y = g.output_size();
    switch (pass) {
        case ConvPass::Forward: return {random_values<float>(x, 1), random_values<float>(w, 2), y};
        case ConvPass::BackwardData: return {random_values<float>(y, 3), random_values<float>(w, 2), x};
        case ConvPass::BackwardWeight: return {random_values<float>(x, 1), random_values<float>(y, 3), w};
    }
    return {};
}

// The CPU direct convolution's answer, in double from the same float inputs.
std::vector<double> oracle(ConvPass pass, const kc::ConvGeometry& g, const Operands& in) {
    const std::vector<double> a(in.a.begin(), in.a.end()), b(in.b.begin(), in.b.end());
    std::vector<double> out(in.out);
    switch (pass) {
        case ConvPass::Forward: kc::forward(kc::ConvAlgo::Direct, g, a.data(), b.data(), out.data()); break;
        case ConvPass::BackwardData: kc::backward_data(kc::ConvAlgo::Direct, g, a.data(), b.data(), out.data()); break;
        case ConvPass::BackwardWeight: kc::backward_weight(kc::ConvAlgo::Direct, g, a.data(), b.data(), out.data()); break;
    }
    return out;
}

// The version's answer on the CPU runtime, in its device memory; NaN wherever it wrote nothing.
std::vector<float> on_cpu_runtime(int version, ConvPass pass, const kc::ConvGeometry& g, const Operands& in) {
    gl::test::DeviceVector<float> a(in.a), b(in.b), out(in.out);
    out.fill_bytes(0xff);
    gl::kernels::cuda_conv(version, pass, g, a.get(), b.get(), out.get());
    return out.to_host();
}

const ConvPass kPasses[] = {ConvPass::Forward, ConvPass::BackwardData, ConvPass::BackwardWeight};

TEST(CudaConv, EveryVersionAndPassMatchesTheCpuDirectConvolution) {
    for (const auto& v : gl::kernels::cuda_conv_versions())
        for (const kc::ConvGeometry& g : shapes())
            for (ConvPass pass : kPasses) {
                const Operands in = operands(pass, g);
                const auto got = on_cpu_runtime(v.number, pass, g, in);
                EXPECT_LT(max_relative_error(got, oracle(pass, g, in)), 1e-5)
                    << v.name << " " << pass_label(pass) << " on " << g.str();
            }
}

TEST(CudaConv, ImplicitGemmIsRightUnderEveryThreadOrder) {
    // Threads that raced past a missing __syncthreads would read stale or half-written
    // tiles under some order; all three must agree with the oracle.
    const kc::ConvGeometry g = shapes().back();
    for (const Schedule& schedule : {Schedule{Order::in_order, 0}, Schedule{Order::reverse, 0}, Schedule{Order::random, 5}}) {
        gl::cuda::cpu::ScopedSchedule scope(schedule);
        for (ConvPass pass : kPasses) {
            const Operands in = operands(pass, g);
            EXPECT_LT(max_relative_error(on_cpu_runtime(2, pass, g, in), oracle(pass, g, in)), 1e-5)
                << pass_label(pass) << " order " << int(schedule.order);
        }
    }
}

TEST(CudaConv, ABadVersionOrGeometryIsRefusedWithAMessage) {
    const kc::ConvGeometry g = shapes().front();
    const Operands in = operands(ConvPass::Forward, g);
    std::vector<float> y(in.out);
    try {
        gl::kernels::cuda_conv(3, ConvPass::Forward, g, in.a.data(), in.b.data(), y.data());
        FAIL() << "version 3 was accepted";
    } catch (const std::exception& e) {
        EXPECT_NE(std::string(e.what()).find("versions are 1 (direct) and 2"), std::string::npos) << e.what();
    }
    kc::ConvGeometry bad = g;
    bad.groups = 2;  // 3 input channels do not split into 2 groups
    EXPECT_THROW(gl::kernels::cuda_conv(1, ConvPass::Forward, bad, in.a.data(), in.b.data(), y.data()), std::exception);
}

TEST(CudaConvDevice, EveryVersionAndPassMatchesTheCpuDirectConvolution) {
#if !GRADLAB_HAVE_CUDA
    GTEST_SKIP() << "needs a CUDA device: this build has no CUDA (nvcc was not found when meson configured it)";
#else
    const gl::cuda::DeviceStatus status = gl::cuda::device_status();
    if (!status.available) GTEST_SKIP() << "needs a CUDA device: " << status.message;
    std::vector<kc::ConvGeometry> grid = shapes();
    grid.push_back(geom(8, 32, 28, 28, 64, 3, 3, 1, 1, 1, 1));  // a CNN layer: many tiles and blocks
    for (const auto& v : gl::kernels::cuda_conv_versions())
        for (const kc::ConvGeometry& g : grid)
            for (ConvPass pass : kPasses) {
                const Operands in = operands(pass, g);
                std::vector<float> got(in.out, NAN);
                gl::kernels::cuda_conv_device_from_host(v.number, pass, g, in.a.data(), in.b.data(), got.data());
                EXPECT_LT(max_relative_error(got, oracle(pass, g, in)), 1e-5)
                    << v.name << " " << pass_label(pass) << " on " << g.str();
            }
#endif
}

}  // namespace
