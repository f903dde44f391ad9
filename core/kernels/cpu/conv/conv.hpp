/// @file
/// @brief The CPU convolution family: one 2-d convolution (NCHW, stride, padding,
/// dilation, groups) computed four ways, each with its data and weight gradients, the way
/// cuDNN offers several algorithms for one problem (claim CONV-1).
///
/// The versions, each in its own numbered file, each adding one idea:
///  1. `direct`       (1_direct.cpp): the seven nested loops of the definition; the oracle.
///  2. `im2col`       (2_im2col.cpp): copy every receptive field into a column, so the
///     convolution becomes one GEMM through our tuned kernel; col2im for the backward.
///  3. `winograd_f2`, `winograd_f4` (3_winograd.cpp): 3x3 stride-1 only. Transform 4x4
///     (6x6) input tiles and the 3x3 filter so that a 2x2 (4x4) output tile costs 16 (36)
///     multiplies instead of 36 (144): 2.25x (4x) fewer.
///  4. `fft`          (4_fft.cpp): convolution is a product in the frequency domain; our
///     own radix-2 FFT, so the cost no longer grows with the filter's size.
///     `fft_fftw` (4b_fftw.cpp): the same, with FFTW's transforms (the optimized peer;
///     unsupported in a build without libfftw3-dev).
///  5. `implicit_gemm` (5_implicit_gemm.cpp): im2col's GEMM without the col matrix: each
///     tap's row of col is a shifted run of the zero-padded image (of one of its stride x
///     stride phases), read in place by a register-tiled (AVX-512) kernel; no copy of the
///     receptive fields, no packing.
///
/// Layouts: input x [N, C, H, W], weight w [K, C/groups, R, S], output y [N, K, P, Q], all
/// contiguous. Every function overwrites its output. T is float or double (double for
/// gradcheck). Owns: the loops over pointers and counts. Knows nothing about tensors or
/// autograd (ops/conv.cpp records the op).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace gl::kernels::conv {

/// The sizes of one convolution problem.
struct ConvGeometry {
    std::int64_t batch = 1;         ///< N, images
    std::int64_t in_channels = 1;   ///< C
    std::int64_t in_h = 1;          ///< H
    std::int64_t in_w = 1;          ///< W
    std::int64_t out_channels = 1;  ///< K
    std::int64_t kernel_h = 1;      ///< R
    std::int64_t kernel_w = 1;      ///< S
    std::int64_t stride_h = 1;      ///< vertical step between receptive fields
    std::int64_t stride_w = 1;      ///< horizontal step
    std::int64_t pad_h = 0;         ///< zero rows added above and below
    std::int64_t pad_w = 0;         ///< zero columns added left and right
    std::int64_t dilation_h = 1;    ///< vertical gap between filter taps
    std::int64_t dilation_w = 1;    ///< horizontal gap
    std::int64_t groups = 1;        ///< channel groups (groups == C == K: depthwise)

    /// P: output rows, floor((H + 2 pad - dilation (R - 1) - 1) / stride) + 1.
    std::int64_t out_h() const;
    /// Q: output columns.
    std::int64_t out_w() const;
    /// C / groups: input channels each filter sees.
    std::int64_t group_in() const { return in_channels / groups; }
    /// K / groups: filters per group.
    std::int64_t group_out() const { return out_channels / groups; }
    /// Elements of x, w and y.
    std::int64_t input_size() const { return batch * in_channels * in_h * in_w; }
    std::int64_t weight_size() const { return out_channels * group_in() * kernel_h * kernel_w; }  ///< elements of w
    std::int64_t output_size() const { return batch * out_channels * out_h() * out_w(); }        ///< elements of y
    /// Multiplies of the definition: N K P Q (C/groups) R S (padding taps included).
    std::int64_t direct_multiplies() const;
    /// Throws gl::Error naming the first inconsistent size (and what to change).
    void validate() const;
    /// "N1 C3 28x28 -> K8 3x3 s1 p1 d1 g1" for tables and messages.
    std::string str() const;
};

/// The algorithms of this family.
enum class ConvAlgo { Direct, Im2col, WinogradF2, WinogradF4, Fft, FftFftw, ImplicitGemm };

/// One algorithm: its name, the idea it adds, and which problems it can solve.
struct ConvAlgorithm {
    ConvAlgo algo;     ///< which
    std::string name;  ///< registry key: direct, im2col, winograd_f2, winograd_f4, fft, fft_fftw, implicit_gemm
    std::string idea;  ///< one line for tables
};

/// Every algorithm, in the order above.
const std::vector<ConvAlgorithm>& conv_algorithms();
/// The algorithm called @p name; throws an error listing the names otherwise.
const ConvAlgorithm& find_conv_algorithm(const std::string& name);
/// The entry of @p algo.
const ConvAlgorithm& conv_algorithm(ConvAlgo algo);
/// Why @p algo cannot solve @p g ("" when it can): Winograd needs a 3x3 filter, stride 1
/// and dilation 1; fft_fftw needs a build with FFTW.
std::string why_unsupported(ConvAlgo algo, const ConvGeometry& g);

/// y = conv(x, w) by @p algo, plus bias[k] on every output plane of filter k when @p bias
/// is not null. im2col and implicit_gemm add the bias while each image's output is still
/// in cache; the others in one pass over y afterwards (the same sums either way: one add
/// per element). Throws if @p algo does not support @p g.
template <class T>
void forward(ConvAlgo algo, const ConvGeometry& g, const T* x, const T* w, T* y, const T* bias = nullptr);
/// y[k-th plane of each of @p planes / channels images] += bias[k]: @p planes planes of
/// @p plane values, plane i taking bias[i % channels] (vectorised for float32).
template <class T>
void add_plane_bias(T* y, const T* bias, std::int64_t planes, std::int64_t channels, std::int64_t plane);
/// dx = dL/dx given dy = dL/dy.
template <class T>
void backward_data(ConvAlgo algo, const ConvGeometry& g, const T* dy, const T* w, T* dx);
/// dw = dL/dw given x and dy.
template <class T>
void backward_weight(ConvAlgo algo, const ConvGeometry& g, const T* x, const T* dy, T* dw);

/// Multiplies that combine data with weights (or their transforms), summed over every
/// convolution pass run since the last reset, on all threads. Multiplies by the constant
/// transform matrices of Winograd and by FFT twiddles are not counted (they do not grow
/// with the channels); an FFT's complex product counts 4. The count is made as the loops
/// run, and tests compare it with the formula of each algorithm.
std::int64_t multiplies();
/// Sets the count to zero.
void reset_multiplies();

// The versions, called through forward()/backward_*() above (one namespace per file).
/// 1. Direct loops.
namespace direct {
template <class T> void forward(const ConvGeometry& g, const T* x, const T* w, T* y);  ///< y = conv(x, w)
template <class T> void backward_data(const ConvGeometry& g, const T* dy, const T* w, T* dx);  ///< dx
template <class T> void backward_weight(const ConvGeometry& g, const T* x, const T* dy, T* dw);  ///< dw
}  // namespace direct
/// 2. im2col + GEMM.
namespace im2col {
/// Copies the receptive fields of images [n0, n0 + count) of group @p group into @p col,
/// a [(C/groups) R S, count P Q] matrix: row (c R + r) S + s, column (n P + p) Q + q holds
/// x[n0 + n, group C/groups + c, p stride - pad + r dilation, ...], 0 where that is padding.
template <class T>
void im2col(const ConvGeometry& g, const T* x, std::int64_t group, std::int64_t n0, std::int64_t count, T* col);
/// The adjoint of im2col: adds every element of @p col back into the input position it
/// was copied from (positions in the padding are dropped). @p dx is accumulated into.
template <class T>
void col2im(const ConvGeometry& g, const T* col, std::int64_t group, std::int64_t n0, std::int64_t count, T* dx);
template <class T> void forward(const ConvGeometry& g, const T* x, const T* w, T* y, const T* bias = nullptr);  ///< y = conv(x, w) (+ bias)
template <class T> void backward_data(const ConvGeometry& g, const T* dy, const T* w, T* dx);  ///< dx
template <class T> void backward_weight(const ConvGeometry& g, const T* x, const T* dy, T* dw);  ///< dw
}  // namespace im2col
/// 3. Winograd F(m x m, 3 x 3), m = 2 or 4.
namespace winograd {
/// F(2x2, 3x3) input transform V = B^T d B of a 4x4 tile d (row-major).
template <class T> void f2_input_transform(const T* d, T* v);
/// F(2x2, 3x3) filter transform U = G g G^T of a 3x3 filter g, giving 4x4.
template <class T> void f2_filter_transform(const T* g, T* u);
/// F(2x2, 3x3) output transform Y = A^T M A of a 4x4 product M, giving 2x2.
template <class T> void f2_output_transform(const T* m, T* y);
template <class T> void forward(int m, const ConvGeometry& g, const T* x, const T* w, T* y);  ///< y = conv(x, w)
template <class T> void backward_data(int m, const ConvGeometry& g, const T* dy, const T* w, T* dx);  ///< dx
template <class T> void backward_weight(int m, const ConvGeometry& g, const T* x, const T* dy, T* dw);  ///< dw
}  // namespace winograd
/// 4. FFT.
namespace fft {
/// Whose 2-d transform the FFT convolution uses.
enum class FftBackend {
    Ours,  ///< our radix-2 loops (4_fft.cpp)
    Fftw   ///< FFTW's (4b_fftw.cpp)
};
template <class T> void forward(FftBackend b, const ConvGeometry& g, const T* x, const T* w, T* y);  ///< y = conv(x, w)
template <class T> void backward_data(FftBackend b, const ConvGeometry& g, const T* dy, const T* w, T* dx);  ///< dx
template <class T> void backward_weight(FftBackend b, const ConvGeometry& g, const T* x, const T* dy, T* dw);  ///< dw
}  // namespace fft
/// 5. Implicit GEMM on the padded grid.
namespace implicit_gemm {
template <class T> void forward(const ConvGeometry& g, const T* x, const T* w, T* y, const T* bias = nullptr);  ///< y = conv(x, w) (+ bias)
template <class T> void backward_data(const ConvGeometry& g, const T* dy, const T* w, T* dx);  ///< dx
template <class T> void backward_weight(const ConvGeometry& g, const T* x, const T* dy, T* dw);  ///< dw
}  // namespace implicit_gemm

/// Adds @p n to the multiply count (for the versions' loops).
void count_multiplies(std::int64_t n);

}  // namespace gl::kernels::conv
