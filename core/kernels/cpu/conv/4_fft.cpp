// 4. FFT convolution. A convolution is a product in the frequency domain, so per image
// and group: transform every (zero-padded) input plane and every filter once, multiply
// the spectra point by point summing over input channels, and transform back. The
// pointwise stage costs N1 N2 complex products per (k, c) pair whatever the filter's
// size, so FFT wins for large filters; for 3x3 it mostly loses (claim CONV-1).
//
// The planes are padded to N1 x N2, powers of two at least as large as the padded image,
// so the circular correlation of the FFT never wraps into the values we keep. Stride and
// dilation are handled at the edges: dilation spreads the filter taps apart before its
// transform, and stride keeps every stride-th output of the full correlation (which is
// wasteful, and is why the autotuner will not pick FFT for strided layers).
//
//   forward:          y   = IFFT( sum_c X[c] conj(W[k,c]) ),   sampled every stride
//   backward data:    dx  = IFFT( sum_k DY[k] W[k,c] ),        DY of dy spread to stride
//   backward weight:  dw  = IFFT( sum_n X[c] conj(DY[k]) ),    sampled every dilation
#include <algorithm>
#include <cmath>
#include <complex>
#include <numbers>
#include <vector>

#include "kernels/cpu/conv/conv.hpp"
#include "kernels/cpu/conv/fftw.hpp"
#include "parallel/thread_pool.hpp"

namespace gl::kernels::conv::fft {
namespace {

template <class T>
using Spectrum = std::vector<std::complex<T>>;

std::int64_t next_pow2(std::int64_t n) {
    std::int64_t p = 1;
    while (p < n) p *= 2;
    return p;
}

// In-place iterative radix-2 FFT of n = 2^k values spaced @p stride apart (Cooley-Tukey:
// reorder by bit-reversed index, then log2 n rounds of butterflies). inverse: e^{+i..},
// without the 1/n (the caller scales once).
template <class T>
void fft_1d(std::complex<T>* a, std::int64_t n, std::int64_t stride, bool inverse) {
    for (std::int64_t i = 1, j = 0; i < n; ++i) {  // bit-reversal permutation
        std::int64_t bit = n >> 1;
        for (; j & bit; bit >>= 1) j ^= bit;
        j ^= bit;
        if (i < j) std::swap(a[i * stride], a[j * stride]);
    }
    for (std::int64_t len = 2; len <= n; len *= 2) {  // butterflies of span len
        const double angle = (inverse ? 2.0 : -2.0) * std::numbers::pi / static_cast<double>(len);
        for (std::int64_t start = 0; start < n; start += len)
            for (std::int64_t j = 0; j < len / 2; ++j) {
                const auto twiddle = std::polar(T(1), static_cast<T>(angle * static_cast<double>(j)));
                const std::complex<T> even = a[(start + j) * stride];
                const std::complex<T> odd = a[(start + j + len / 2) * stride] * twiddle;
                a[(start + j) * stride] = even + odd;
                a[(start + j + len / 2) * stride] = even - odd;
            }
    }
}

// The 2-d transform of an N1 x N2 plane: every row, then every column.
template <class T>
void fft_2d(std::complex<T>* plane, std::int64_t N1, std::int64_t N2, bool inverse) {
    for (std::int64_t i = 0; i < N1; ++i) fft_1d(plane + i * N2, N2, 1, inverse);
    for (std::int64_t j = 0; j < N2; ++j) fft_1d(plane + j, N1, N2, inverse);
}

// The sizes shared by the three passes, and whose 2-d transform they use.
struct Plan {
    std::int64_t N1, N2;  // transform size
    FftBackend backend;
    Plan(const ConvGeometry& g, FftBackend b)
        : N1(next_pow2(g.in_h + 2 * g.pad_h)), N2(next_pow2(g.in_w + 2 * g.pad_w)), backend(b) {}
    std::int64_t size() const { return N1 * N2; }
    // The in-place 2-d transform of an N1 x N2 plane (unscaled when inverse).
    template <class T>
    void transform(std::complex<T>* plane, bool inverse) const {
        if (backend == FftBackend::Fftw) return fftw_2d(plane, N1, N2, inverse);
        fft_2d(plane, N1, N2, inverse);
    }
};

// Spectrum of one input plane placed at (pad_h, pad_w) of a zero N1 x N2 plane.
template <class T>
void input_spectrum(const ConvGeometry& g, const Plan& plan, const T* plane, std::complex<T>* out) {
    std::fill(out, out + plan.size(), std::complex<T>(0));
    for (std::int64_t i = 0; i < g.in_h; ++i)
        for (std::int64_t j = 0; j < g.in_w; ++j) out[(i + g.pad_h) * plan.N2 + j + g.pad_w] = plane[i * g.in_w + j];
    plan.transform(out, false);
}

// Spectrum of one R x S filter with its taps spread @p dilation apart.
template <class T>
void filter_spectrum(const ConvGeometry& g, const Plan& plan, const T* filter, std::complex<T>* out) {
    std::fill(out, out + plan.size(), std::complex<T>(0));
    for (std::int64_t r = 0; r < g.kernel_h; ++r)
        for (std::int64_t s = 0; s < g.kernel_w; ++s)
            out[r * g.dilation_h * plan.N2 + s * g.dilation_w] = filter[r * g.kernel_w + s];
    plan.transform(out, false);
}

// Spectrum of one P x Q output-gradient plane, each value placed at (p stride, q stride).
template <class T>
void output_spectrum(const ConvGeometry& g, const Plan& plan, const T* plane, std::complex<T>* out) {
    std::fill(out, out + plan.size(), std::complex<T>(0));
    const std::int64_t P = g.out_h(), Q = g.out_w();
    for (std::int64_t p = 0; p < P; ++p)
        for (std::int64_t q = 0; q < Q; ++q) out[p * g.stride_h * plan.N2 + q * g.stride_w] = plane[p * Q + q];
    plan.transform(out, false);
}

// acc += a * b (or a * conj(b)), point by point: 4 real multiplies per point.
template <class T>
std::int64_t multiply_accumulate(const std::complex<T>* a, const std::complex<T>* b, bool conjugate_b,
                                 std::complex<T>* acc, std::int64_t n) {
    for (std::int64_t i = 0; i < n; ++i) acc[i] += a[i] * (conjugate_b ? std::conj(b[i]) : b[i]);
    return 4 * n;
}

// Every filter of @p group, transformed: [Kg][Cg] spectra.
template <class T>
Spectrum<T> filter_spectra(const ConvGeometry& g, const Plan& plan, const T* w, std::int64_t group) {
    const std::int64_t KC = g.group_out() * g.group_in(), RS = g.kernel_h * g.kernel_w;
    Spectrum<T> out(static_cast<std::size_t>(KC * plan.size()));
    for (std::int64_t kc = 0; kc < KC; ++kc)
        filter_spectrum(g, plan, w + (group * KC + kc) * RS, out.data() + kc * plan.size());
    return out;
}

}  // namespace

template <class T>
void forward(FftBackend backend, const ConvGeometry& g, const T* x, const T* w, T* y) {
    const Plan plan(g, backend);
    const std::int64_t Kg = g.group_out(), Cg = g.group_in(), P = g.out_h(), Q = g.out_w(), F = plan.size();
    const T scale = T(1) / static_cast<T>(F);
    for (std::int64_t group = 0; group < g.groups; ++group) {
        const Spectrum<T> Wf = filter_spectra(g, plan, w, group);
        parallel_for(g.batch, 1, [&](std::int64_t begin, std::int64_t end) {
            Spectrum<T> Xf(static_cast<std::size_t>(Cg * F)), acc(static_cast<std::size_t>(F));
            std::int64_t count = 0;
            for (std::int64_t n = begin; n < end; ++n) {
                for (std::int64_t c = 0; c < Cg; ++c)
                    input_spectrum(g, plan, x + (n * g.in_channels + group * Cg + c) * g.in_h * g.in_w,
                                   Xf.data() + c * F);
                for (std::int64_t k = 0; k < Kg; ++k) {
                    std::fill(acc.begin(), acc.end(), std::complex<T>(0));
                    for (std::int64_t c = 0; c < Cg; ++c)
                        count += multiply_accumulate(Xf.data() + c * F, Wf.data() + (k * Cg + c) * F, true, acc.data(), F);
                    plan.transform(acc.data(), true);
                    T* plane = y + (n * g.out_channels + group * Kg + k) * P * Q;
                    for (std::int64_t p = 0; p < P; ++p)
                        for (std::int64_t q = 0; q < Q; ++q)
                            plane[p * Q + q] = acc[static_cast<std::size_t>(p * g.stride_h * plan.N2 + q * g.stride_w)].real() * scale;
                }
            }
            count_multiplies(count);
        });
    }
}

template <class T>
void backward_data(FftBackend backend, const ConvGeometry& g, const T* dy, const T* w, T* dx) {
    const Plan plan(g, backend);
    const std::int64_t Kg = g.group_out(), Cg = g.group_in(), P = g.out_h(), Q = g.out_w(), F = plan.size();
    const T scale = T(1) / static_cast<T>(F);
    for (std::int64_t group = 0; group < g.groups; ++group) {
        const Spectrum<T> Wf = filter_spectra(g, plan, w, group);
        parallel_for(g.batch, 1, [&](std::int64_t begin, std::int64_t end) {
            Spectrum<T> DYf(static_cast<std::size_t>(Kg * F)), acc(static_cast<std::size_t>(F));
            std::int64_t count = 0;
            for (std::int64_t n = begin; n < end; ++n) {
                for (std::int64_t k = 0; k < Kg; ++k)
                    output_spectrum(g, plan, dy + (n * g.out_channels + group * Kg + k) * P * Q, DYf.data() + k * F);
                for (std::int64_t c = 0; c < Cg; ++c) {
                    std::fill(acc.begin(), acc.end(), std::complex<T>(0));
                    for (std::int64_t k = 0; k < Kg; ++k)
                        count += multiply_accumulate(DYf.data() + k * F, Wf.data() + (k * Cg + c) * F, false, acc.data(), F);
                    plan.transform(acc.data(), true);
                    T* plane = dx + (n * g.in_channels + group * Cg + c) * g.in_h * g.in_w;
                    for (std::int64_t i = 0; i < g.in_h; ++i)
                        for (std::int64_t j = 0; j < g.in_w; ++j)
                            plane[i * g.in_w + j] = acc[static_cast<std::size_t>((i + g.pad_h) * plan.N2 + j + g.pad_w)].real() * scale;
                }
            }
            count_multiplies(count);
        });
    }
}

template <class T>
void backward_weight(FftBackend backend, const ConvGeometry& g, const T* x, const T* dy, T* dw) {
    const Plan plan(g, backend);
    const std::int64_t Kg = g.group_out(), Cg = g.group_in(), P = g.out_h(), Q = g.out_w(), F = plan.size();
    const std::int64_t R = g.kernel_h, S = g.kernel_w;
    const T scale = T(1) / static_cast<T>(F);
    for (std::int64_t group = 0; group < g.groups; ++group) {
        // Spectra of dw[k, c] summed over images (the transform is linear), one filter k per task.
        parallel_for(Kg, 1, [&](std::int64_t begin, std::int64_t end) {
            Spectrum<T> Xf(static_cast<std::size_t>(Cg * F)), DYf(static_cast<std::size_t>(F));
            Spectrum<T> acc(static_cast<std::size_t>(Cg * F));
            std::int64_t count = 0;
            for (std::int64_t k = begin; k < end; ++k) {
                std::fill(acc.begin(), acc.end(), std::complex<T>(0));
                for (std::int64_t n = 0; n < g.batch; ++n) {
                    output_spectrum(g, plan, dy + (n * g.out_channels + group * Kg + k) * P * Q, DYf.data());
                    for (std::int64_t c = 0; c < Cg; ++c) {
                        input_spectrum(g, plan, x + (n * g.in_channels + group * Cg + c) * g.in_h * g.in_w, Xf.data() + c * F);
                        count += multiply_accumulate(Xf.data() + c * F, DYf.data(), true, acc.data() + c * F, F);
                    }
                }
                for (std::int64_t c = 0; c < Cg; ++c) {
                    std::complex<T>* spectrum = acc.data() + c * F;
                    plan.transform(spectrum, true);
                    T* filter_grad = dw + ((group * Kg + k) * Cg + c) * R * S;
                    for (std::int64_t r = 0; r < R; ++r)
                        for (std::int64_t s = 0; s < S; ++s)
                            filter_grad[r * S + s] = spectrum[r * g.dilation_h * plan.N2 + s * g.dilation_w].real() * scale;
                }
            }
            count_multiplies(count);
        });
    }
}

template void forward<float>(FftBackend, const ConvGeometry&, const float*, const float*, float*);
template void forward<double>(FftBackend, const ConvGeometry&, const double*, const double*, double*);
template void backward_data<float>(FftBackend, const ConvGeometry&, const float*, const float*, float*);
template void backward_data<double>(FftBackend, const ConvGeometry&, const double*, const double*, double*);
template void backward_weight<float>(FftBackend, const ConvGeometry&, const float*, const float*, float*);
template void backward_weight<double>(FftBackend, const ConvGeometry&, const double*, const double*, double*);

}  // namespace gl::kernels::conv::fft
