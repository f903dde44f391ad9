// 4b. FFT convolution with FFTW's transforms: the pipeline of 4_fft.cpp unchanged, only
// the 2-d FFT of each plane comes from FFTW (libfftw3-dev), the optimized peer of our
// readable radix-2 loops. FFTW builds a "plan" per transform size and direction once
// (planning is not thread-safe, so plans are made under a lock and kept); executing a
// plan on new arrays is thread-safe, so the threads of a convolution share them.
#include "kernels/cpu/conv/fftw.hpp"

#include "base/error.hpp"

#if GRADLAB_HAVE_FFTW
#include <fftw3.h>

#include <map>
#include <mutex>
#include <tuple>
#endif

namespace gl::kernels::conv::fft {

#if GRADLAB_HAVE_FFTW
namespace {

std::mutex g_planning;  // FFTW's planner is not thread-safe

// FFTW's float and double interfaces have different names: one traits struct each.
template <class T>
struct Fftw;
template <>
struct Fftw<float> {
    using Plan = fftwf_plan;
    using Complex = fftwf_complex;
    static Plan plan(int n1, int n2, Complex* a, int sign) {
        return fftwf_plan_dft_2d(n1, n2, a, a, sign, FFTW_ESTIMATE | FFTW_UNALIGNED);
    }
    static void run(Plan p, Complex* a) { fftwf_execute_dft(p, a, a); }
};
template <>
struct Fftw<double> {
    using Plan = fftw_plan;
    using Complex = fftw_complex;
    static Plan plan(int n1, int n2, Complex* a, int sign) {
        return fftw_plan_dft_2d(n1, n2, a, a, sign, FFTW_ESTIMATE | FFTW_UNALIGNED);
    }
    static void run(Plan p, Complex* a) { fftw_execute_dft(p, a, a); }
};

// The in-place plan for an n1 x n2 transform in one direction, made on first use. The
// plans live until the process ends (a handful of sizes per network): the map is never
// destroyed, so they stay reachable (a destroyed map would leave them lost, which the
// leak checker reports, and a plan destroyed at exit could still be in use by a thread).
template <class T>
typename Fftw<T>::Plan plan_for(std::int64_t n1, std::int64_t n2, bool inverse, std::complex<T>* example) {
    static auto& plans = *new std::map<std::tuple<std::int64_t, std::int64_t, bool>, typename Fftw<T>::Plan>;
    const std::lock_guard lock(g_planning);
    auto& plan = plans[{n1, n2, inverse}];
    if (!plan) {  // FFTW_ESTIMATE: planning does not overwrite the array
        plan = Fftw<T>::plan(static_cast<int>(n1), static_cast<int>(n2),
                             reinterpret_cast<typename Fftw<T>::Complex*>(example), inverse ? FFTW_BACKWARD : FFTW_FORWARD);
        check(plan != nullptr, "fft_fftw: FFTW could not plan a " + std::to_string(n1) + "x" + std::to_string(n2) +
                                   " transform");
    }
    return plan;
}

}  // namespace

bool fftw_available() { return true; }

template <class T>
void fftw_2d(std::complex<T>* plane, std::int64_t n1, std::int64_t n2, bool inverse) {
    // std::complex<T> has the layout of FFTW's T[2] (the C++ standard guarantees it).
    Fftw<T>::run(plan_for<T>(n1, n2, inverse, plane), reinterpret_cast<typename Fftw<T>::Complex*>(plane));
}
#else
bool fftw_available() { return false; }

template <class T>
void fftw_2d(std::complex<T>*, std::int64_t, std::int64_t, bool) {
    throw Error("fft_fftw: this build has no FFTW; apt-get install libfftw3-dev, then meson setup --reconfigure build");
}
#endif

template void fftw_2d<float>(std::complex<float>*, std::int64_t, std::int64_t, bool);
template void fftw_2d<double>(std::complex<double>*, std::int64_t, std::int64_t, bool);

}  // namespace gl::kernels::conv::fft
