/// @file
/// @brief FFTW's 2-d transform, the optimized back-end the FFT convolution can use instead
/// of our radix-2 loops (algorithm `fft_fftw`, 4b_fftw.cpp).
#pragma once

#include <complex>
#include <cstdint>

namespace gl::kernels::conv::fft {

/// True when this build found FFTW (libfftw3-dev); `fft_fftw` is unsupported otherwise.
bool fftw_available();

/// The in-place 2-d DFT of an @p n1 x @p n2 row-major plane by FFTW: e^{-i..} forward,
/// e^{+i..} when @p inverse, without the 1/(n1 n2) (as our fft_2d). Thread-safe. Throws
/// gl::Error, saying what to install, in a build without FFTW.
template <class T>
void fftw_2d(std::complex<T>* plane, std::int64_t n1, std::int64_t n2, bool inverse);

}  // namespace gl::kernels::conv::fft
