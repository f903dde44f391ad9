// The convolution family: every algorithm against the direct loops in float64 and
// float32, float64 gradcheck of every algorithm's gradients through the op, the
// multiply counts, the autotuner, pooling, batch norm, dropout and the models.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <memory>

#include "autograd/gradcheck.hpp"
#include "kernels/cpu/conv/autotune.hpp"
#include "kernels/cpu/conv/conv.hpp"
#include "kernels/cpu/conv/fftw.hpp"
#include "nn/conv_layers.hpp"
#include "ops/conv.hpp"
#include "ops/ops.hpp"
#include "parallel/thread_pool.hpp"
#include "testkit/conv_problems.hpp"

namespace gl {
namespace {

namespace kc = kernels::conv;
using testkit::random_values;
using testkit::max_relative_error;

// N C H W -> K R S, stride, padding, dilation, groups.
constexpr auto geom = testkit::conv_geometry;

// The grid of CONV-1: odd sizes, strides, padding, dilation, groups (depthwise included),
// non-square filters and planes.
std::vector<kc::ConvGeometry> shape_grid() {
    std::vector<kc::ConvGeometry> grid = {
        geom(2, 3, 7, 9, 4, 3, 3, 1, 1, 1, 1),    // odd planes, same padding
        geom(1, 2, 5, 5, 3, 3, 3, 1, 0, 1, 1),    // valid, one tile and a piece
        geom(2, 4, 11, 6, 6, 3, 3, 1, 2, 1, 2),   // groups, padding 2
        geom(1, 6, 9, 9, 6, 3, 3, 1, 1, 1, 6),    // depthwise
        geom(2, 3, 9, 8, 5, 3, 3, 2, 1, 1, 1),    // stride 2
        geom(1, 2, 10, 9, 3, 3, 3, 1, 2, 2, 1),   // dilation 2
        geom(2, 3, 8, 7, 4, 5, 3, 1, 2, 1, 1),    // 5x3 filter
        geom(1, 4, 7, 7, 8, 1, 1, 1, 0, 1, 1),    // 1x1
        geom(2, 5, 13, 13, 7, 3, 3, 3, 0, 1, 1),  // stride 3
        geom(1, 2, 6, 5, 3, 3, 3, 1, 3, 1, 1),    // padding past the filter's reach (3 > 2)
        // More than 16 filters (or, for the data gradient, channels) take implicit_gemm's
        // position tile: two and four vectors of filters, padded ones, with groups, strided.
        geom(2, 3, 7, 9, 20, 3, 3, 1, 1, 1, 1),     // 20 filters: two vectors, 12 padding
        geom(1, 40, 6, 5, 40, 3, 3, 1, 1, 1, 1),    // 40 filters and 40 channels: four vectors
        geom(1, 34, 7, 7, 34, 3, 3, 1, 1, 1, 2),    // 17 a group: two vectors per group
        geom(1, 20, 9, 8, 36, 3, 3, 2, 1, 1, 1),    // stride 2 with 20 channels: the phases' data gradient
        geom(1, 8, 14, 14, 4, 3, 3, 1, 1, 1, 4),  // groups 4
    };
    grid.back().stride_w = 1;
    return grid;
}

// The three passes of one algorithm, in T, on the same inputs.
template <class T>
struct Passes {
    std::vector<T> y, dx, dw;
};

template <class T>
Passes<T> run_all(kc::ConvAlgo algo, const kc::ConvGeometry& g) {
    const auto x = random_values<T>(g.input_size(), 1), w = random_values<T>(g.weight_size(), 2);
    const auto dy = random_values<T>(g.output_size(), 3);
    Passes<T> out{std::vector<T>(dy.size()), std::vector<T>(x.size()), std::vector<T>(w.size())};
    kc::forward(algo, g, x.data(), w.data(), out.y.data());
    kc::backward_data(algo, g, dy.data(), w.data(), out.dx.data());
    kc::backward_weight(algo, g, x.data(), dy.data(), out.dw.data());
    return out;
}

TEST(Conv, EveryAlgorithmAgreesWithFloat64DirectOnTheShapeGrid) {
    for (const kc::ConvGeometry& g : shape_grid()) {
        const Passes<double> oracle = run_all<double>(kc::ConvAlgo::Direct, g);
        for (const kc::ConvAlgorithm& a : kc::conv_algorithms()) {
            if (!kc::why_unsupported(a.algo, g).empty()) continue;
            SCOPED_TRACE(a.name + " on " + g.str());
            const Passes<double> d = run_all<double>(a.algo, g);
            EXPECT_LT(max_relative_error(d.y, oracle.y), 1e-12);
            EXPECT_LT(max_relative_error(d.dx, oracle.dx), 1e-12);
            EXPECT_LT(max_relative_error(d.dw, oracle.dw), 1e-12);
            const Passes<float> f = run_all<float>(a.algo, g);
            EXPECT_LT(max_relative_error(f.y, oracle.y), 1e-4);
            EXPECT_LT(max_relative_error(f.dx, oracle.dx), 1e-4);
            EXPECT_LT(max_relative_error(f.dw, oracle.dw), 1e-4);
        }
    }
}

TEST(Conv, WinogradRefusesWhatItCannotDo) {
    EXPECT_NE(kc::why_unsupported(kc::ConvAlgo::WinogradF2, geom(1, 1, 8, 8, 1, 3, 3, 2, 1, 1, 1)), "");
    EXPECT_NE(kc::why_unsupported(kc::ConvAlgo::WinogradF4, geom(1, 1, 8, 8, 1, 5, 5, 1, 1, 1, 1)), "");
    EXPECT_NE(kc::why_unsupported(kc::ConvAlgo::WinogradF4, geom(1, 1, 8, 8, 1, 3, 3, 1, 2, 2, 1)), "");
    std::vector<float> buf(64 * 4);
    EXPECT_THROW(kc::forward(kc::ConvAlgo::WinogradF2, geom(1, 1, 8, 8, 1, 3, 3, 2, 1, 1, 1), buf.data(), buf.data(),
                             buf.data()),
                 Error);
}

TEST(Conv, BadGeometriesAreRefusedWithAMessage) {
    EXPECT_THROW(geom(1, 3, 8, 8, 4, 3, 3, 1, 1, 1, 2).validate(), Error);  // groups does not divide C
    EXPECT_THROW(geom(1, 1, 2, 2, 1, 5, 5, 1, 0, 1, 1).validate(), Error);  // filter larger than input
    EXPECT_THROW(kc::find_conv_algorithm("winograd"), Error);
    EXPECT_THROW(kc::set_conv_algorithm("fast"), Error);
}

// float64 tensors of the geometry's input and weight, requiring grad.
std::vector<Tensor> conv_inputs(const kc::ConvGeometry& g, std::uint64_t seed) {
    Rng rng(seed);
    Tensor x = randn({g.batch, g.in_channels, g.in_h, g.in_w}, rng, 1.0, DType::Float64).set_requires_grad();
    Tensor w = randn({g.out_channels, g.group_in(), g.kernel_h, g.kernel_w}, rng, 1.0, DType::Float64).set_requires_grad();
    Tensor b = randn({g.out_channels}, rng, 1.0, DType::Float64).set_requires_grad();
    return {x, w, b};
}

Conv2dOptions options_of(const kc::ConvGeometry& g, const std::string& algorithm) {
    Conv2dOptions o;
    o.stride = {g.stride_h, g.stride_w}, o.padding = {g.pad_h, g.pad_w}, o.dilation = {g.dilation_h, g.dilation_w};
    o.groups = g.groups, o.algorithm = algorithm;
    return o;
}

TEST(Conv, GradcheckOfEveryAlgorithmInFloat64) {
    const std::vector<kc::ConvGeometry> shapes = {geom(2, 2, 5, 6, 4, 3, 3, 1, 1, 1, 2), geom(1, 2, 7, 5, 2, 3, 3, 2, 1, 1, 1),
                                                  geom(1, 1, 6, 6, 2, 3, 3, 1, 2, 2, 1)};
    for (const kc::ConvGeometry& g : shapes)
        for (const kc::ConvAlgorithm& a : kc::conv_algorithms()) {
            if (!kc::why_unsupported(a.algo, g).empty()) continue;
            SCOPED_TRACE(a.name + " on " + g.str());
            const auto fn = [&](const std::vector<Tensor>& v) { return conv2d(v[0], v[1], v[2], options_of(g, a.name)); };
            const GradcheckResult r = gradcheck(fn, conv_inputs(g, 5));
            EXPECT_TRUE(r.ok) << r.message;
            EXPECT_GT(r.checked, 0);
        }
}

TEST(Conv, BiasIsOneAddPerOutputAndItsGradientIgnoresTheThreadCount) {
    // im2col and implicit_gemm add the bias inside their loops (each image's block while it
    // is in cache), the others in a pass after: for every algorithm, on 1 and 3 threads (3
    // > the batch of 2 sends im2col down its chunked path), conv2d with a bias must be the
    // same bits as conv2d without one plus the bias, one add per output element. The bias
    // gradient (plane sums in double, added in image order) must be the same bits on
    // every thread count, and match a float64 sum.
    const kc::ConvGeometry g = geom(2, 4, 7, 9, 6, 3, 3, 1, 1, 1, 2);
    Rng rng(21);
    const Tensor x = randn({g.batch, g.in_channels, g.in_h, g.in_w}, rng);
    const Tensor w = randn({g.out_channels, g.group_in(), g.kernel_h, g.kernel_w}, rng);
    const Tensor r = randn({g.batch, g.out_channels, g.out_h(), g.out_w()}, rng);
    const int before = get_num_threads();
    for (const kc::ConvAlgorithm& a : kc::conv_algorithms()) {
        if (!kc::why_unsupported(a.algo, g).empty()) continue;
        std::vector<std::vector<float>> bias_grads;
        for (const int threads : {1, 3}) {
            SCOPED_TRACE(a.name + ", " + std::to_string(threads) + " threads");
            set_num_threads(threads);
            Tensor b = randn({g.out_channels}, *std::make_unique<Rng>(22)).set_requires_grad();
            const Tensor with = conv2d(x, w, b, options_of(g, a.name));
            const Tensor without = conv2d(x, w, Tensor(), options_of(g, a.name));
            EXPECT_EQ(with.to_vector<float>(), (without + reshape(b.detach(), {g.out_channels, 1, 1})).to_vector<float>());
            sum(mul(with, r)).backward();
            bias_grads.push_back(b.grad().to_vector<float>());
            const std::vector<double> want = sum(to_dtype(r, DType::Float64), {0, 2, 3}).to_vector<double>();
            for (std::int64_t k = 0; k < g.out_channels; ++k) EXPECT_NEAR(bias_grads.back()[k], want[k], 1e-5) << "filter " << k;
        }
        EXPECT_EQ(bias_grads[1], bias_grads[0]) << a.name;
    }
    set_num_threads(before);
}

TEST(Conv, OpChecksItsInputs) {
    const Tensor x = zeros({1, 3, 5, 5}), w = zeros({4, 2, 3, 3});
    EXPECT_THROW(conv2d(x, w, Tensor()), Error);        // 2 channels per group, 3 in the input
    EXPECT_THROW(conv2d(zeros({3, 5, 5}), zeros({4, 3, 3, 3}), Tensor()), Error);  // not 4-d
    EXPECT_THROW(conv2d(zeros({1, 3, 5, 5}), zeros({4, 3, 3, 3}), zeros({3})), Error);  // bias size
    EXPECT_EQ(conv2d(zeros({1, 3, 5, 5}), zeros({4, 3, 3, 3}), zeros({4})).shape(), (Shape{1, 4, 3, 3}));
}

// Multiplies of one pass of @p algo.
std::int64_t counted(kc::ConvAlgo algo, const kc::ConvGeometry& g, kc::ConvPass pass) {
    const auto x = random_values<float>(g.input_size(), 1), w = random_values<float>(g.weight_size(), 2);
    std::vector<float> y(static_cast<std::size_t>(g.output_size())), dx(x.size()), dw(w.size());
    kc::reset_multiplies();
    if (pass == kc::ConvPass::Forward) kc::forward(algo, g, x.data(), w.data(), y.data());
    if (pass == kc::ConvPass::BackwardData) kc::backward_data(algo, g, y.data(), w.data(), dx.data());
    if (pass == kc::ConvPass::BackwardWeight) kc::backward_weight(algo, g, x.data(), y.data(), dw.data());
    return kc::multiplies();
}

TEST(Conv, WinogradCountsTwoAndAQuarterAndFourTimesFewerMultiplies) {
    // No padding and an output of 16x16, a multiple of both tile sizes: every tile is whole.
    const kc::ConvGeometry g = geom(2, 8, 18, 18, 16, 3, 3, 1, 0, 1, 1);
    for (kc::ConvPass pass : {kc::ConvPass::Forward, kc::ConvPass::BackwardData, kc::ConvPass::BackwardWeight}) {
        SCOPED_TRACE(kc::pass_name(pass));
        const std::int64_t direct = counted(kc::ConvAlgo::Direct, g, pass);
        EXPECT_EQ(direct, g.direct_multiplies());  // 2 16 16 16 8 9
        EXPECT_EQ(counted(kc::ConvAlgo::Im2col, g, pass), direct);
        EXPECT_EQ(counted(kc::ConvAlgo::WinogradF2, g, pass) * 9, direct * 4);   // 16 per 4 outputs vs 9 per output
        EXPECT_EQ(counted(kc::ConvAlgo::WinogradF4, g, pass) * 4, direct);       // 36 per 16 outputs
        // FFT: a 32x32 transform per (image, k, c): 4 real multiplies per point.
        EXPECT_EQ(counted(kc::ConvAlgo::Fft, g, pass), 4 * 32 * 32 * g.batch * g.out_channels * g.in_channels);
    }
}

TEST(Conv, ImplicitGemmCountsItsPaddedTiles) {
    // 16x16 outputs on an 18-wide padded grid (no padding: the grid is the image), 72 taps.
    // 16 filters take the run tile: each output row computes 18 grid positions and keeps
    // 16; 16 rows of 18 are 6 whole tiles of 48, and 16 filters two panels of 8.
    const kc::ConvGeometry g = geom(2, 8, 18, 18, 16, 3, 3, 1, 0, 1, 1);
    EXPECT_EQ(counted(kc::ConvAlgo::ImplicitGemm, g, kc::ConvPass::Forward) * 16, g.direct_multiplies() * 18);
    // 32 filters take the position tile (two vectors, 12 positions): the 256 real positions
    // only, in 22 tiles, the last padded (264).
    const kc::ConvGeometry wide = geom(2, 8, 18, 18, 32, 3, 3, 1, 0, 1, 1);
    EXPECT_EQ(counted(kc::ConvAlgo::ImplicitGemm, wide, kc::ConvPass::Forward) * 256, wide.direct_multiplies() * 264);
    // The weight gradient sums over the real positions: 72 taps are three tiles of 24 (16
    // filters) or six of 12 (32 filters), exactly the direct count.
    EXPECT_EQ(counted(kc::ConvAlgo::ImplicitGemm, g, kc::ConvPass::BackwardWeight), g.direct_multiplies());
    EXPECT_EQ(counted(kc::ConvAlgo::ImplicitGemm, wide, kc::ConvPass::BackwardWeight), wide.direct_multiplies());
    // A stride splits the image into phases, each a plane of the grid: stride 2 on 18x18
    // gives 9x9 phase planes and 8x8 outputs, 8 rows of 9 grid positions = 72, which run
    // tiles of 16 cover with the fewest extra (80; tiles of 32 or 48 would need 96).
    const kc::ConvGeometry strided = geom(2, 8, 18, 18, 16, 3, 3, 2, 0, 1, 1);
    EXPECT_EQ(counted(kc::ConvAlgo::ImplicitGemm, strided, kc::ConvPass::Forward), 2 * 16 * 80 * 72);
}

TEST(Conv, ImplicitGemmSumsTheWeightGradientOverItsImages) {
    // 19 images: on any thread count the threads take uneven runs of images, each summed
    // into the thread's own copy of dw before the copies are added.
    for (const kc::ConvGeometry& g : {geom(19, 3, 7, 6, 5, 3, 3, 1, 1, 1, 1), geom(19, 4, 9, 9, 6, 3, 3, 2, 1, 1, 2)}) {
        SCOPED_TRACE(g.str());
        EXPECT_LT(max_relative_error(run_all<double>(kc::ConvAlgo::ImplicitGemm, g).dw, run_all<double>(kc::ConvAlgo::Direct, g).dw), 1e-12);
    }
}

TEST(Conv, DirectSkipsThePaddingTaps) {
    const kc::ConvGeometry g = geom(1, 1, 3, 3, 1, 3, 3, 1, 1, 1, 1);
    // Of the 9 outputs' 81 taps, 81 - 4 corners x 5 - 4 edges x 3 = 49 land inside.
    EXPECT_EQ(counted(kc::ConvAlgo::Direct, g, kc::ConvPass::Forward), 49);
    EXPECT_EQ(g.direct_multiplies(), 81);
}

TEST(Conv, FftwBackEndCountsOurFftsProductsOrSaysWhatToInstall) {
    const kc::ConvGeometry g = geom(2, 3, 9, 7, 4, 3, 3, 1, 1, 1, 1);
    if (!kc::fft::fftw_available()) {
        EXPECT_NE(kc::why_unsupported(kc::ConvAlgo::FftFftw, g).find("libfftw3-dev"), std::string::npos);
        return;
    }
    // The same pipeline with another transform: the same pointwise products, counted alike.
    for (const kc::ConvPass pass : {kc::ConvPass::Forward, kc::ConvPass::BackwardData, kc::ConvPass::BackwardWeight})
        EXPECT_EQ(counted(kc::ConvAlgo::FftFftw, g, pass), counted(kc::ConvAlgo::Fft, g, pass));
}

TEST(ConvAutotune, PicksTheFastestMeasuredAndCachesIt) {
    kc::clear_tune_cache();
    kc::set_conv_algorithm("auto");
    const kc::ConvGeometry g = geom(2, 4, 12, 12, 8, 3, 3, 1, 1, 1, 1);
    const kc::ConvAlgo pick = kc::choose(kc::ConvPass::Forward, g, false);
    const auto table = kc::tune_table();
    ASSERT_EQ(table.size(), 1u);
    std::size_t supported = 0;  // all of them for 3x3 stride 1, but fft_fftw only in a build with FFTW
    for (const auto& a : kc::conv_algorithms()) supported += kc::why_unsupported(a.algo, g).empty() ? 1 : 0;
    EXPECT_EQ(supported, kc::conv_algorithms().size() - (kc::fft::fftw_available() ? 0 : 1));
    EXPECT_EQ(table[0].seconds.size(), supported);
    double best = 1e9;
    std::string fastest;
    for (const auto& [name, s] : table[0].seconds)
        if (s < best) best = s, fastest = name;
    EXPECT_EQ(kc::conv_algorithm(pick).name, fastest);
    EXPECT_EQ(kc::choose(kc::ConvPass::Forward, g, false), pick);  // cached: no new row
    EXPECT_EQ(kc::tune_table().size(), 1u);
    EXPECT_NE(kc::format_tune_table(kc::tune_table()).find("-> " + fastest), std::string::npos);
    // A strided problem times only the algorithms that support it: not the two Winograds.
    kc::choose(kc::ConvPass::Forward, geom(1, 2, 9, 9, 2, 3, 3, 2, 1, 1, 1), false);
    EXPECT_EQ(kc::tune_table().back().seconds.size(), supported - 2);
    kc::clear_tune_cache();
}

TEST(ConvAutotune, AFixedAlgorithmIsUsedWhereItCanRun) {
    kc::set_conv_algorithm("winograd_f4");
    EXPECT_EQ(kc::choose(kc::ConvPass::Forward, geom(1, 2, 9, 9, 2, 3, 3, 1, 1, 1, 1), false), kc::ConvAlgo::WinogradF4);
    EXPECT_EQ(kc::choose(kc::ConvPass::Forward, geom(1, 2, 9, 9, 2, 3, 3, 2, 1, 1, 1), false), kc::ConvAlgo::Im2col);
    EXPECT_TRUE(kc::tune_table().empty());
    kc::set_conv_algorithm("auto");
}

TEST(Pooling, MaxAndAverageForwardAndGradcheck) {
    const Tensor x = from_vector<double>({1, 5, 2, 0, 3, 4, 7, 1, 2, 2, 6, 8, 0, 9, 1, 1}, {1, 1, 4, 4});
    EXPECT_EQ(max_pool2d(x, 2).to_vector<double>(), (std::vector<double>{5, 7, 9, 8}));
    EXPECT_EQ(avg_pool2d(x, 2).to_vector<double>(), (std::vector<double>{13.0 / 4, 10.0 / 4, 13.0 / 4, 16.0 / 4}));
    Rng rng(3);
    const Tensor r = randn({2, 3, 7, 6}, rng, 1.0, DType::Float64).set_requires_grad();
    for (auto [k, s, p] : {std::tuple{2, 2, 0}, std::tuple{3, 2, 1}, std::tuple{3, 1, 0}}) {
        SCOPED_TRACE("kernel " + std::to_string(k) + " stride " + std::to_string(s) + " pad " + std::to_string(p));
        EXPECT_TRUE(gradcheck([&](const std::vector<Tensor>& v) { return max_pool2d(v[0], k, s, p); }, {r}).ok);
        EXPECT_TRUE(gradcheck([&](const std::vector<Tensor>& v) { return avg_pool2d(v[0], k, s, p); }, {r}).ok);
    }
    // Padding is never a candidate: an all-negative plane pools to its own values, not 0.
    const Tensor negative = from_vector<double>({-4, -3, -2, -1}, {1, 1, 2, 2});
    EXPECT_EQ(max_pool2d(negative, 2, 1, 1).to_vector<double>(),
              (std::vector<double>{-4, -3, -3, -2, -1, -1, -2, -1, -1}));
    EXPECT_THROW(max_pool2d(zeros({1, 1, 2, 2}), 3), Error);
    EXPECT_EQ(flatten(zeros({2, 3, 4, 5})).shape(), (Shape{2, 60}));
}

TEST(Pooling, Float32PoolAndReluBackwardEqualFloat64) {
    // The float32 backward paths of ReLU (binary_broadcast on the threads) and max pooling (each
    // thread clears its planes, then adds into them) against the same graph in float64,
    // on a shape whose planes do not split evenly between threads, with zeros (ReLU's
    // edge: no gradient at 0) and a gradient that is not all ones.
    Rng rng(12);
    const Tensor x64 = rand_uniform({3, 5, 9, 11}, -1.0, 1.0, rng, DType::Float64);
    std::vector<double> v = x64.to_vector<double>();
    for (std::size_t i = 0; i < v.size(); i += 7) v[i] = 0.0;
    const Tensor weights = rand_uniform({3, 5, 5, 6}, 0.5, 2.0, rng, DType::Float64);  // the pooled shape
    std::vector<std::vector<double>> grads;
    for (DType d : {DType::Float64, DType::Float32}) {
        Tensor x = to_dtype(from_vector<double>(v, x64.shape()), d).set_requires_grad();
        sum(mul(max_pool2d(relu(x), 3, 2, 1), to_dtype(weights, d))).backward();
        grads.push_back(to_dtype(x.grad(), DType::Float64).to_vector<double>());
    }
    ASSERT_EQ(grads[0].size(), grads[1].size());
    for (std::size_t i = 0; i < grads[0].size(); ++i) ASSERT_NEAR(grads[1][i], grads[0][i], 1e-6) << "element " << i;
}

TEST(Pooling, TwoByTwoWindowsMatchTheDefinitionTiesAndNansIncluded) {
    // Values 0..3 (hashed), so most windows hold ties, and a NaN in every 13th element: the
    // output and the gradient must follow the definition's order (taps row by row, a tap
    // wins only when strictly larger, so the first of equal maxima, and a NaN in a
    // window's first tap, win; a NaN elsewhere loses). Float64 runs the portable loops,
    // float32 the AVX-512 ones (kernels/cpu/pool.hpp) where the CPU has them: rows of 1 to
    // 33 outputs (one masked vector, several, a ragged last one), and odd last rows and
    // columns, which belong to no window.
    const double nan = std::nan("");
    for (const DType dtype : {DType::Float64, DType::Float32})
        for (const auto& [H, W] : std::vector<std::pair<std::int64_t, std::int64_t>>{
                 {2, 2}, {7, 17}, {14, 14}, {28, 28}, {3, 31}, {4, 33}, {5, 64}, {2, 67}}) {
            SCOPED_TRACE(std::string(name_of(dtype)) + " " + std::to_string(H) + "x" + std::to_string(W));
            const std::int64_t P = H / 2, Q = W / 2, planes = 2 * 3;
            std::vector<double> values;
            for (std::uint64_t i = 0; i < static_cast<std::uint64_t>(planes * H * W); ++i)
                values.push_back(i % 13 == 5 ? nan : static_cast<double>((i * 0x9E3779B97F4A7C15ull >> 60) % 4));
            const Tensor x = to_dtype(from_vector<double>(values, {2, 3, H, W}), dtype).set_requires_grad();
            const Tensor y = max_pool2d(x, 2, 2, 0);
            sum(y).backward();
            std::vector<double> expected_y, expected_grad(values.size(), 0.0);
            for (std::int64_t plane = 0; plane < planes; ++plane)
                for (std::int64_t p = 0; p < P; ++p)
                    for (std::int64_t q = 0; q < Q; ++q) {
                        std::int64_t best = plane * H * W + 2 * p * W + 2 * q;
                        for (std::int64_t i = 0; i < 2; ++i)
                            for (std::int64_t j = 0; j < 2; ++j) {
                                const std::int64_t at = plane * H * W + (2 * p + i) * W + 2 * q + j;
                                if (values[static_cast<std::size_t>(at)] > values[static_cast<std::size_t>(best)]) best = at;
                            }
                        expected_y.push_back(values[static_cast<std::size_t>(best)]);
                        expected_grad[static_cast<std::size_t>(best)] += 1.0;
                    }
            const std::vector<double> got_y = to_dtype(y, DType::Float64).to_vector<double>();
            ASSERT_EQ(got_y.size(), expected_y.size());
            for (std::size_t i = 0; i < got_y.size(); ++i) {
                if (std::isnan(expected_y[i])) EXPECT_TRUE(std::isnan(got_y[i])) << "output " << i;
                else EXPECT_EQ(got_y[i], expected_y[i]) << "output " << i;
            }
            EXPECT_EQ(to_dtype(x.grad(), DType::Float64).to_vector<double>(), expected_grad);
        }
}

TEST(Pooling, ReluMaxPoolIsReluThenPoolBitForBit) {
    // relu_max_pool2d against the two ops it fuses, on float32 (the fused AVX-512 loop where
    // the CPU has it): the same outputs and the same input gradients, bit for bit. Values
    // -2..1 (hashed), so many windows hold only values <= 0 (their gradient must stop:
    // ReLU's backward blocks it) and many hold ties; a NaN in every 13th element and -0 in
    // every 11th (ReLU turns both into +0, so a NaN in a window's first tap must lose to a
    // positive tap, where plain pooling would keep it); rows of 1 to 33 outputs and odd
    // last rows and columns.
    const double nan = std::nan("");
    for (const auto& [H, W] : std::vector<std::pair<std::int64_t, std::int64_t>>{{2, 2}, {7, 17}, {14, 14}, {28, 28}, {3, 31}, {4, 33}, {5, 64}}) {
        SCOPED_TRACE(std::to_string(H) + "x" + std::to_string(W));
        std::vector<double> values;
        for (std::uint64_t i = 0; i < static_cast<std::uint64_t>(2 * 3 * H * W); ++i)
            values.push_back(i % 13 == 0 ? nan : i % 11 == 0 ? -0.0 : static_cast<double>((i * 0x9E3779B97F4A7C15ull >> 60) % 4) - 2.0);
        const Tensor weights = rand_uniform({2, 3, H / 2, W / 2}, 0.5, 2.0, *std::make_unique<Rng>(5), DType::Float32);
        std::vector<std::vector<float>> outputs, grads;
        for (const bool fused : {false, true}) {
            Tensor x = to_dtype(from_vector<double>(values, {2, 3, H, W}), DType::Float32).set_requires_grad();
            const Tensor y = fused ? relu_max_pool2d(x, 2) : max_pool2d(relu(x), 2);
            sum(mul(y, weights)).backward();
            outputs.push_back(y.to_vector<float>());
            grads.push_back(x.grad().to_vector<float>());
        }
        ASSERT_EQ(outputs[1].size(), outputs[0].size());
        for (std::size_t i = 0; i < outputs[0].size(); ++i)
            ASSERT_EQ(std::bit_cast<std::uint32_t>(outputs[1][i]), std::bit_cast<std::uint32_t>(outputs[0][i])) << "output " << i;
        for (std::size_t i = 0; i < grads[0].size(); ++i)
            ASSERT_EQ(std::bit_cast<std::uint32_t>(grads[1][i]), std::bit_cast<std::uint32_t>(grads[0][i])) << "gradient " << i;
    }
}

TEST(Pooling, SequentialFusesReluAndMaxPoolWithTheSameResults) {
    // The CNN's ReLU, MaxPool2d pairs run as relu_max_pool2d in nn::Sequential; with fusion
    // off, each module runs its own op. Logits and every parameter's gradient agree bit
    // for bit.
    std::vector<std::vector<float>> logits, grads;
    for (const bool fusion : {false, true}) {
        Rng rng(9);
        auto net = nn::make_cnn(rng, 12, 4, 6, 16, 3);
        net->set_fusion(fusion);
        const Tensor x = rand_uniform({5, 144}, 0.0, 1.0, rng);
        const Tensor y = net->forward(x);
        sum(mul(y, y)).backward();
        logits.push_back(y.to_vector<float>());
        std::vector<float> all;
        for (const Tensor& p : net->parameters()) {
            const std::vector<float> g = p.grad().to_vector<float>();
            all.insert(all.end(), g.begin(), g.end());
        }
        grads.push_back(all);
    }
    EXPECT_EQ(logits[1], logits[0]);
    EXPECT_EQ(grads[1], grads[0]);
}

TEST(BatchNorm, TrainingNormalizesAndUpdatesTheRunningStatistics) {
    Rng rng(4);
    const Tensor x = (randn({4, 3, 5, 5}, rng, 2.0, DType::Float64) + 3.0);
    const Tensor gamma = ones({3}, DType::Float64), beta = zeros({3}, DType::Float64);
    Tensor rm = zeros({3}, DType::Float64), rv = ones({3}, DType::Float64);
    const Tensor y = batch_norm2d(x, gamma, beta, rm, rv, true, 0.1, 0.0);
    const std::vector<double> m = mean(y, {0, 2, 3}).to_vector<double>();
    const std::vector<double> v = mean(y * y, {0, 2, 3}).to_vector<double>();
    for (int c = 0; c < 3; ++c) {
        EXPECT_NEAR(m[c], 0.0, 1e-12);
        EXPECT_NEAR(v[c], 1.0, 1e-9);
        EXPECT_NEAR(rm.to_vector<double>()[c], 0.1 * mean(x, {0, 2, 3}).to_vector<double>()[c], 1e-12);
        EXPECT_GT(rv.to_vector<double>()[c], 0.9 + 0.1 * 2.0);  // moved toward the variance, about 4
    }
    // Evaluation with the running statistics is an affine map of x.
    const Tensor e = batch_norm2d(x, gamma, beta, rm, rv, false, 0.1, 0.0);
    const double c0 = (x.at({0, 0, 0, 0}) - rm.at({0})) / std::sqrt(rv.at({0}));
    EXPECT_NEAR(e.at({0, 0, 0, 0}), c0, 1e-12);
}

TEST(BatchNorm, GradcheckInTrainingAndEvaluation) {
    Rng rng(6);
    const Tensor x = randn({3, 2, 3, 4}, rng, 1.0, DType::Float64).set_requires_grad();
    const Tensor gamma = randn({2}, rng, 1.0, DType::Float64).set_requires_grad();
    const Tensor beta = randn({2}, rng, 1.0, DType::Float64).set_requires_grad();
    for (bool training : {true, false}) {
        Tensor rm = zeros({2}, DType::Float64), rv = ones({2}, DType::Float64);
        const auto fn = [&](const std::vector<Tensor>& v) { return batch_norm2d(v[0], v[1], v[2], rm, rv, training); };
        const GradcheckResult r = gradcheck(fn, {x, gamma, beta});
        EXPECT_TRUE(r.ok) << (training ? "training: " : "eval: ") << r.message;
    }
}

TEST(Dropout, ZeroesAboutPAndKeepsTheExpectation) {
    Rng rng(7);
    const Tensor x = ones({100000}, DType::Float64).set_requires_grad();
    const Tensor y = dropout(x, 0.3, true, rng);
    const std::vector<double> v = y.to_vector<double>();
    const double dropped = static_cast<double>(std::count(v.begin(), v.end(), 0.0)) / static_cast<double>(v.size());
    EXPECT_NEAR(dropped, 0.3, 0.01);
    EXPECT_NEAR(mean(y).item(), 1.0, 0.02);
    sum(y).backward();
    EXPECT_EQ(x.grad().to_vector<double>(), v);  // the gradient is the mask
    EXPECT_EQ(dropout(x, 0.3, false, rng).impl_ptr(), x.impl_ptr());  // identity in evaluation
    EXPECT_THROW(dropout(x, 1.0, true, rng), Error);
}

TEST(ConvModels, CnnAndResNetMapImagesToLogitsAndTrain) {
    Rng rng(8);
    const Tensor images = randn({4, 784}, rng);
    for (auto net : {nn::make_cnn(rng, 28, 4, 8, 16), nn::make_resnet(rng, 28, 4)}) {
        SCOPED_TRACE(net->describe());
        const Tensor logits = (*net)(images);
        EXPECT_EQ(logits.shape(), (Shape{4, 10}));
        const Tensor targets = from_vector<std::int32_t>({1, 2, 3, 4}, {4});
        cross_entropy(logits, targets).backward();
        for (const auto& [name, p] : net->named_parameters()) {
            ASSERT_TRUE(p.grad().defined()) << name;
            EXPECT_GT(sum(p.grad() * p.grad()).item(), 0.0) << name;
        }
    }
}

}  // namespace
}  // namespace gl
