// Lab 11 contract tests: im2col and col2im on random shapes (every stride, padding,
// dilation, group and image range), with guard zones around every buffer: nothing is
// written outside col (im2col) or outside the chunk's images and group (col2im); and the
// transforms are linear maps of their tile alone (scaling and adding tiles). The student's
// code is called only through graded::student (graded.hpp).
#include <gtest/gtest.h>

#include "contract.hpp"
#include "graded.hpp"
#include "kernels/cpu/conv/conv.hpp"

namespace gl {
namespace {

namespace kc = kernels::conv;
using labs::Guarded;
using labs::pick;

kc::ConvGeometry random_geometry(Rng& rng) {
    kc::ConvGeometry g;
    g.groups = pick(rng, 1, 3);
    g.batch = pick(rng, 1, 3), g.in_channels = g.groups * pick(rng, 1, 3), g.out_channels = g.groups * pick(rng, 1, 2);
    g.kernel_h = pick(rng, 1, 4), g.kernel_w = pick(rng, 1, 4);
    g.stride_h = pick(rng, 1, 3), g.stride_w = pick(rng, 1, 3), g.dilation_h = pick(rng, 1, 2), g.dilation_w = pick(rng, 1, 2);
    g.pad_h = pick(rng, 0, 2), g.pad_w = pick(rng, 0, 2);
    g.in_h = pick(rng, g.dilation_h * (g.kernel_h - 1) + 1, 11), g.in_w = pick(rng, g.dilation_w * (g.kernel_w - 1) + 1, 11);
    return g;
}

std::vector<float> filled(std::size_t n, std::uint64_t seed) {
    Rng rng(seed);
    std::vector<float> v(n);
    for (auto& e : v) e = static_cast<float>(rng.uniform(-1, 1));
    return v;
}

TEST(Lab11, ContractIm2colAndCol2imOnRandomShapes) {
    Rng rng(1100);
    for (int trial = 0; trial < 40; ++trial) {
        const kc::ConvGeometry g = random_geometry(rng);
        const std::int64_t group = pick(rng, 0, g.groups - 1), n0 = pick(rng, 0, g.batch - 1);
        const std::int64_t count = pick(rng, 1, g.batch - n0);
        const std::size_t cols = static_cast<std::size_t>(g.group_in() * g.kernel_h * g.kernel_w * count * g.out_h() * g.out_w());
        const auto x = filled(static_cast<std::size_t>(g.input_size()), 7 + trial);
        const auto c = filled(cols, 900 + trial);
        // im2col of x into a guarded col; col2im of c into a guarded copy of x.
        const auto [col, dx] = graded::student<std::pair<std::vector<float>, std::vector<float>>>("contract", [&] {
            Guarded<float> col_buf(cols), dx_buf(x.size());
            std::copy(x.begin(), x.end(), dx_buf.data());
            kc::im2col::im2col(g, x.data(), group, n0, count, col_buf.data());
            kc::im2col::col2im(g, c.data(), group, n0, count, dx_buf.data());
            return std::pair{col_buf.all(), dx_buf.all()};
        });
        SCOPED_TRACE(g.str() + " group " + std::to_string(group) + " images " + std::to_string(n0) + "+" + std::to_string(count));
        ASSERT_EQ(col.size(), cols + 128);
        ASSERT_EQ(dx.size(), x.size() + 128);
        EXPECT_EQ(labs::guard_damage(col, 64), "") << "im2col wrote outside col";
        EXPECT_EQ(labs::guard_damage(dx, 64), "") << "col2im wrote outside dx";
        // Adjointness: <im2col(x), c> = <x, col2im(c) - x> (col2im added into a copy of x).
        double lhs = 0, rhs = 0;
        for (std::size_t i = 0; i < cols; ++i) lhs += double(col[64 + i]) * c[i];
        for (std::size_t i = 0; i < x.size(); ++i) rhs += double(x[i]) * (double(dx[64 + i]) - x[i]);
        EXPECT_NEAR(lhs, rhs, 1e-4 * (1 + std::abs(lhs))) << "col2im must be the adjoint (transpose) of im2col";
        // Images outside the chunk and channels outside the group keep their values.
        const std::int64_t plane = g.in_h * g.in_w;
        std::int64_t touched_outside = 0;
        for (std::int64_t n = 0; n < g.batch; ++n)
            for (std::int64_t ch = 0; ch < g.in_channels; ++ch) {
                const bool inside = n >= n0 && n < n0 + count && ch / g.group_in() == group;
                for (std::int64_t i = 0; !inside && i < plane; ++i) {
                    const std::size_t at = static_cast<std::size_t>((n * g.in_channels + ch) * plane + i);
                    touched_outside += dx[64 + at] != x[at];
                }
            }
        EXPECT_EQ(touched_outside, 0) << "col2im changed images or channels outside its chunk and group";
    }
}

TEST(Lab11, ContractTransformsAreLinearInTheirTileAlone) {
    for (std::uint64_t seed = 0; seed < 10; ++seed) {
        const auto a = filled(16, seed), b = filled(16, 50 + seed);
        std::vector<float> sum(16);
        for (int i = 0; i < 16; ++i) sum[i] = 2 * a[i] + b[i];
        // Each transform applied to a, b and 2a + b, in guarded buffers.
        const auto out = graded::student<std::vector<std::vector<float>>>("linear", [&] {
            std::vector<std::vector<float>> results;
            for (const std::vector<float>* in : {&a, &b, static_cast<const std::vector<float>*>(&sum)}) {
                Guarded<float> v(16), u(16), y(4);
                kc::winograd::f2_input_transform(in->data(), v.data());
                kc::winograd::f2_filter_transform(in->data(), u.data());  // reads the first 9 values
                kc::winograd::f2_output_transform(in->data(), y.data());
                results.push_back(v.all()), results.push_back(u.all()), results.push_back(y.all());
            }
            return results;
        });
        ASSERT_EQ(out.size(), 9u);
        for (int t = 0; t < 3; ++t) {
            const char* name[] = {"input", "filter", "output"};
            for (int k = 0; k < 3; ++k) EXPECT_EQ(labs::guard_damage(out[3 * k + t], 64), "") << name[t] << " transform";
            const std::size_t n = out[t].size() - 128;
            for (std::size_t i = 0; i < n; ++i)
                EXPECT_NEAR(out[6 + t][64 + i], 2 * out[t][64 + i] + out[3 + t][64 + i], 1e-5)
                    << "the " << name[t] << " transform is not a linear map of its tile";
        }
    }
}

}  // namespace
}  // namespace gl
