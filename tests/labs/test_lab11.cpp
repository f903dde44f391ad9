// Lab 11 graded tests: im2col and col2im, and the Winograd F(2x2, 3x3) transforms.
// Points per test are in labs/11-convolution/rubric.json. Nothing is timed: the checks are
// exact layouts, agreement with the direct loops (core/kernels/cpu/conv/1_direct.cpp, not
// a lab file) on odd shapes, finite differences, and counted multiplies.
//
// The student's code runs only inside graded::student (graded.hpp); the expected values
// are computed in the test body, by the direct loops or by the formulas written here.
#include <gtest/gtest.h>

#include <cmath>

#include "autograd/gradcheck.hpp"
#include "graded.hpp"
#include "kernels/cpu/conv/conv.hpp"
#include "ops/conv.hpp"
#include "testkit/conv_problems.hpp"

namespace gl {
namespace {

namespace kc = kernels::conv;
using testkit::random_values;

// N C H W -> K R S, stride, padding, dilation, groups.
constexpr auto geom = testkit::conv_geometry;

// max |a - b| / max |b|.
template <class A, class B>
double relative_error(const std::vector<A>& a, const std::vector<B>& b) {
    return testkit::max_relative_error(a, b);
}

// Odd shapes: every stride, padding, dilation and group case im2col must handle.
std::vector<kc::ConvGeometry> odd_shapes() {
    std::vector<kc::ConvGeometry> s = {
        geom(2, 3, 7, 9, 5, 3, 3, 1, 1, 1, 1),  geom(1, 2, 5, 6, 3, 3, 2, 2, 0, 1, 1), geom(3, 4, 9, 7, 6, 3, 3, 1, 2, 1, 2),
        geom(2, 5, 11, 8, 5, 3, 3, 2, 1, 1, 5), geom(1, 3, 10, 9, 4, 3, 3, 1, 2, 2, 1), geom(2, 2, 6, 5, 3, 1, 1, 1, 0, 1, 1),
        geom(1, 3, 13, 7, 2, 5, 3, 3, 2, 1, 1),
    };
    s[1].pad_w = 1, s[6].stride_w = 1;  // non-square padding and stride
    return s;
}

// 3x3 stride-1 shapes for Winograd, with outputs of odd sizes (partial tiles).
std::vector<kc::ConvGeometry> winograd_shapes() {
    return {geom(2, 3, 7, 9, 5, 3, 3, 1, 1, 1, 1), geom(1, 2, 5, 5, 3, 3, 3, 1, 0, 1, 1),
            geom(2, 4, 9, 6, 6, 3, 3, 1, 2, 1, 2), geom(1, 6, 8, 11, 6, 3, 3, 1, 1, 1, 6)};
}

// The direct loops in float64: the oracle of every check.
struct Oracle {
    std::vector<double> y, dx, dw;
};
Oracle direct_oracle(const kc::ConvGeometry& g) {
    const auto x = random_values<double>(g.input_size(), 1), w = random_values<double>(g.weight_size(), 2);
    const auto dy = random_values<double>(g.output_size(), 3);
    Oracle o{std::vector<double>(dy.size()), std::vector<double>(x.size()), std::vector<double>(w.size())};
    kc::direct::forward(g, x.data(), w.data(), o.y.data());
    kc::direct::backward_data(g, dy.data(), w.data(), o.dx.data());
    kc::direct::backward_weight(g, x.data(), dy.data(), o.dw.data());
    return o;
}

// Where im2col's row (c, r, s), column (n, p, q) reads from: the flat index in x, or -1 for padding.
std::int64_t source_of(const kc::ConvGeometry& g, std::int64_t group, std::int64_t n, std::int64_t c, std::int64_t r,
                       std::int64_t s, std::int64_t p, std::int64_t q) {
    const std::int64_t ih = p * g.stride_h - g.pad_h + r * g.dilation_h, iw = q * g.stride_w - g.pad_w + s * g.dilation_w;
    if (ih < 0 || ih >= g.in_h || iw < 0 || iw >= g.in_w) return -1;
    return ((n * g.in_channels + group * g.group_in() + c) * g.in_h + ih) * g.in_w + iw;
}

// Calls fn(col index, source index) for every entry of the col matrix of images [n0, n0 + count).
template <class Fn>
void for_each_col_entry(const kc::ConvGeometry& g, std::int64_t group, std::int64_t n0, std::int64_t count, Fn&& fn) {
    const std::int64_t P = g.out_h(), Q = g.out_w(), columns = count * P * Q;
    for (std::int64_t c = 0; c < g.group_in(); ++c)
        for (std::int64_t r = 0; r < g.kernel_h; ++r)
            for (std::int64_t s = 0; s < g.kernel_w; ++s)
                for (std::int64_t n = 0; n < count; ++n)
                    for (std::int64_t p = 0; p < P; ++p)
                        for (std::int64_t q = 0; q < Q; ++q)
                            fn(((c * g.kernel_h + r) * g.kernel_w + s) * columns + (n * P + p) * Q + q,
                               source_of(g, group, n0 + n, c, r, s, p, q));
}

std::int64_t col_size(const kc::ConvGeometry& g, std::int64_t count) {
    return g.group_in() * g.kernel_h * g.kernel_w * count * g.out_h() * g.out_w();
}

// ---- Task 1: im2col and col2im ------------------------------------------------------------

TEST(Lab11, Im2colLayoutOnOddShapes) {
    for (const kc::ConvGeometry& g : odd_shapes()) {
        const auto x = random_values<float>(g.input_size(), 4);
        // The last group, and the images after the first: group and n0 offsets both count.
        const std::int64_t group = g.groups - 1, n0 = g.batch > 1 ? 1 : 0, count = g.batch - n0;
        const auto col = graded::student<std::vector<float>>("im2col", [&] {
            std::vector<float> out(static_cast<std::size_t>(col_size(g, count)), -7.0f);
            kc::im2col::im2col(g, x.data(), group, n0, count, out.data());
            return out;
        });
        ASSERT_EQ(col.size(), static_cast<std::size_t>(col_size(g, count))) << g.str();
        std::int64_t wrong = 0, first = -1;
        for_each_col_entry(g, group, n0, count, [&](std::int64_t at, std::int64_t from) {
            const float expected = from < 0 ? 0.0f : x[static_cast<std::size_t>(from)];
            if (col[static_cast<std::size_t>(at)] != expected && wrong++ == 0) first = at;
        });
        EXPECT_EQ(wrong, 0) << g.str() << ": " << wrong << " col entries are wrong, the first at index " << first
                            << "; row (c R + r) S + s, column (n P + p) Q + q holds x at row p stride - pad + r "
                               "dilation (0 in the padding)";
    }
}

TEST(Lab11, Col2imAddsEveryEntryBackWhereItCameFrom) {
    for (const kc::ConvGeometry& g : odd_shapes()) {
        const std::int64_t group = g.groups - 1, n0 = g.batch > 1 ? 1 : 0, count = g.batch - n0;
        const auto col = random_values<double>(col_size(g, count), 5);
        const auto start = random_values<double>(g.input_size(), 6);  // col2im adds to what is there
        const auto dx = graded::student<std::vector<double>>("col2im", [&] {
            std::vector<double> out = start;
            kc::im2col::col2im(g, col.data(), group, n0, count, out.data());
            return out;
        });
        std::vector<double> expected = start;
        for_each_col_entry(g, group, n0, count, [&](std::int64_t at, std::int64_t from) {
            if (from >= 0) expected[static_cast<std::size_t>(from)] += col[static_cast<std::size_t>(at)];
        });
        EXPECT_LT(relative_error(dx, expected), 1e-12)
            << g.str() << ": col2im must add each col entry into the input element im2col copied it from, skip "
                          "padding, and leave other images and groups as they were";
    }
}

// The three passes through the im2col algorithm (the student's im2col and col2im) in float32.
TEST(Lab11, Im2colConvolutionMatchesDirectForwardAndBackward) {
    for (const kc::ConvGeometry& g : odd_shapes()) {
        const Oracle o = direct_oracle(g);
        const auto [y, dx, dw] = graded::student<std::tuple<std::vector<float>, std::vector<float>, std::vector<float>>>(
            "im2col passes", [&] {
                const auto x = random_values<float>(g.input_size(), 1), w = random_values<float>(g.weight_size(), 2);
                const auto dy = random_values<float>(g.output_size(), 3);
                std::vector<float> y(dy.size()), dx(x.size()), dw(w.size());
                kc::forward(kc::ConvAlgo::Im2col, g, x.data(), w.data(), y.data());
                kc::backward_data(kc::ConvAlgo::Im2col, g, dy.data(), w.data(), dx.data());
                kc::backward_weight(kc::ConvAlgo::Im2col, g, x.data(), dy.data(), dw.data());
                return std::tuple{y, dx, dw};
            });
        EXPECT_LT(relative_error(y, o.y), 1e-5) << g.str() << ": the forward (im2col, then the GEMM) differs from direct";
        EXPECT_LT(relative_error(dx, o.dx), 1e-5) << g.str() << ": the data gradient (GEMM, then col2im) differs";
        EXPECT_LT(relative_error(dw, o.dw), 1e-5) << g.str() << ": the weight gradient (im2col, then the GEMM) differs";
    }
}

TEST(Lab11, Im2colGradientsPassGradcheckInFloat64) {
    const kc::ConvGeometry g = geom(2, 4, 6, 5, 4, 3, 2, 2, 1, 1, 2);
    Conv2dOptions opts;
    opts.stride = {2, 2}, opts.padding = {1, 1}, opts.groups = 2;
    Rng rng(11);
    const std::vector<Tensor> inputs = {
        randn({g.batch, g.in_channels, g.in_h, g.in_w}, rng, 1.0, DType::Float64).set_requires_grad(),
        randn({g.out_channels, g.group_in(), g.kernel_h, g.kernel_w}, rng, 1.0, DType::Float64).set_requires_grad()};
    const auto with = [&](const std::string& algorithm) {
        return [&, algorithm](const std::vector<Tensor>& v) {
            Conv2dOptions o = opts;
            o.algorithm = algorithm;
            return conv2d(v[0], v[1], Tensor(), o);
        };
    };
    const auto grads = graded::student<std::vector<Tensor>>("im2col gradients",
                                                            [&] { return analytic_gradients(with("im2col"), inputs); });
    ASSERT_EQ(grads.size(), 2u);
    const GradcheckResult r = compare_with_finite_differences(with("direct"), inputs, grads);
    EXPECT_TRUE(r.ok) << "the im2col gradients disagree with finite differences of the direct convolution: " << r.message;
}

// ---- Task 2: the Winograd F(2x2, 3x3) transforms --------------------------------------------

// out = L X R for small row-major matrices.
std::vector<double> product(const std::vector<double>& L, const std::vector<double>& X, const std::vector<double>& R,
                            int rows, int inner1, int inner2, int cols) {
    std::vector<double> t(static_cast<std::size_t>(rows * inner2), 0.0), out(static_cast<std::size_t>(rows * cols), 0.0);
    for (int i = 0; i < rows; ++i)
        for (int j = 0; j < inner2; ++j)
            for (int e = 0; e < inner1; ++e) t[i * inner2 + j] += L[i * inner1 + e] * X[e * inner2 + j];
    for (int i = 0; i < rows; ++i)
        for (int j = 0; j < cols; ++j)
            for (int e = 0; e < inner2; ++e) out[i * cols + j] += t[i * inner2 + e] * R[e * cols + j];
    return out;
}

std::vector<double> transposed(const std::vector<double>& M, int rows, int cols) {
    std::vector<double> out(M.size());
    for (int i = 0; i < rows; ++i)
        for (int j = 0; j < cols; ++j) out[j * rows + i] = M[i * cols + j];
    return out;
}

const std::vector<double> kBT = {1, 0, -1, 0, 0, 1, 1, 0, 0, -1, 1, 0, 0, 1, 0, -1};
const std::vector<double> kG = {1, 0, 0, 0.5, 0.5, 0.5, 0.5, -0.5, 0.5, 0, 0, 1};
const std::vector<double> kAT = {1, 1, 1, 0, 0, 1, -1, -1};

TEST(Lab11, WinogradTransformsMatchTheirMatrices) {
    for (std::uint64_t seed = 0; seed < 20; ++seed) {
        const auto d = random_values<double>(16, 100 + seed), f = random_values<double>(9, 200 + seed);
        const auto m = random_values<double>(16, 300 + seed);
        const auto [v, u, y] = graded::student<std::tuple<std::vector<double>, std::vector<double>, std::vector<double>>>(
            "transforms", [&] {
                std::vector<double> v(16), u(16), y(4);
                kc::winograd::f2_input_transform(d.data(), v.data());
                kc::winograd::f2_filter_transform(f.data(), u.data());
                kc::winograd::f2_output_transform(m.data(), y.data());
                return std::tuple{v, u, y};
            });
        EXPECT_LT(relative_error(v, product(kBT, d, transposed(kBT, 4, 4), 4, 4, 4, 4)), 1e-14)
            << "the input transform must compute V = B^T d B";
        EXPECT_LT(relative_error(u, product(kG, f, transposed(kG, 4, 3), 4, 3, 3, 4)), 1e-14)
            << "the filter transform must compute U = G g G^T";
        EXPECT_LT(relative_error(y, product(kAT, m, transposed(kAT, 2, 4), 2, 4, 4, 2)), 1e-14)
            << "the output transform must compute Y = A^T M A";
    }
}

TEST(Lab11, WinogradConvolutionMatchesDirect) {
    for (const kc::ConvGeometry& g : winograd_shapes()) {
        const Oracle o = direct_oracle(g);
        const auto y = graded::student<std::vector<float>>("winograd forward", [&] {
            const auto x = random_values<float>(g.input_size(), 1), w = random_values<float>(g.weight_size(), 2);
            std::vector<float> y(static_cast<std::size_t>(g.output_size()));
            kc::forward(kc::ConvAlgo::WinogradF2, g, x.data(), w.data(), y.data());
            return y;
        });
        EXPECT_LT(relative_error(y, o.y), 1e-5) << g.str() << ": Winograd F(2x2,3x3) differs from direct convolution";
    }
}

// ---- Task 3: the multiply count ----------------------------------------------------------------

TEST(Lab11, WinogradMultipliesAreTwoAndAQuarterTimesFewer) {
    for (const kc::ConvGeometry& g : {geom(2, 4, 10, 10, 6, 3, 3, 1, 0, 1, 1), geom(1, 3, 9, 7, 4, 3, 3, 1, 1, 1, 1)}) {
        const Oracle o = direct_oracle(g);
        const auto [y, winograd, im2col] = graded::student<std::tuple<std::vector<float>, std::int64_t, std::int64_t>>(
            "multiplies", [&] {
                const auto x = random_values<float>(g.input_size(), 1), w = random_values<float>(g.weight_size(), 2);
                std::vector<float> y(static_cast<std::size_t>(g.output_size()));
                kc::reset_multiplies();
                kc::forward(kc::ConvAlgo::WinogradF2, g, x.data(), w.data(), y.data());
                const std::int64_t winograd_count = kc::multiplies();
                kc::reset_multiplies();
                kc::forward(kc::ConvAlgo::Im2col, g, x.data(), w.data(), y.data());
                return std::tuple{y, winograd_count, kc::multiplies()};
            });
        ASSERT_LT(relative_error(y, o.y), 1e-5) << g.str() << ": the result must be right before its multiplies count";
        const std::int64_t tiles = ((g.out_h() + 1) / 2) * ((g.out_w() + 1) / 2);
        EXPECT_EQ(winograd, 16 * tiles * g.batch * g.out_channels * g.group_in())
            << g.str() << ": Winograd F(2x2,3x3) multiplies 16 transformed values per 2x2 tile per (filter, channel)";
        EXPECT_EQ(im2col, g.direct_multiplies()) << g.str() << ": the GEMM of im2col multiplies K x (C R S) x (N P Q)";
        if (g.out_h() % 2 == 0 && g.out_w() % 2 == 0) {
            EXPECT_EQ(winograd * 9, g.direct_multiplies() * 4) << "with whole tiles, 2.25x fewer than direct";
        }
    }
}

}  // namespace
}  // namespace gl
