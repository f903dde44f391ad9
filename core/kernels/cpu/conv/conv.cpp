// The convolution family's shared parts: the geometry, the table of algorithms, the
// dispatch to each version and the multiply count.
#include "kernels/cpu/conv/conv.hpp"

#include <atomic>
#include <sstream>
#include <type_traits>

#include "base/error.hpp"
#include "kernels/cpu/elementwise.hpp"
#include "parallel/thread_pool.hpp"
#include "kernels/cpu/conv/fftw.hpp"

namespace gl::kernels::conv {
namespace {

std::atomic<std::int64_t> g_multiplies{0};

// Output extent of one spatial dimension: the number of filter placements that fit.
std::int64_t out_extent(std::int64_t in, std::int64_t kernel, std::int64_t stride, std::int64_t pad,
                        std::int64_t dilation) {
    const std::int64_t span = dilation * (kernel - 1) + 1;  // the filter's reach, gaps included
    return (in + 2 * pad - span) / stride + 1;
}

}  // namespace

std::int64_t ConvGeometry::out_h() const { return out_extent(in_h, kernel_h, stride_h, pad_h, dilation_h); }
std::int64_t ConvGeometry::out_w() const { return out_extent(in_w, kernel_w, stride_w, pad_w, dilation_w); }

std::int64_t ConvGeometry::direct_multiplies() const {
    return batch * out_channels * out_h() * out_w() * group_in() * kernel_h * kernel_w;
}

void ConvGeometry::validate() const {
    const auto need = [&](bool ok, const std::string& what) {
        if (!ok) throw Error("conv2d " + str() + ": " + what);
    };
    need(batch >= 1 && in_channels >= 1 && in_h >= 1 && in_w >= 1, "the input must have at least one element");
    need(out_channels >= 1 && kernel_h >= 1 && kernel_w >= 1, "the filter must have at least one element");
    need(stride_h >= 1 && stride_w >= 1 && dilation_h >= 1 && dilation_w >= 1, "stride and dilation must be >= 1");
    need(pad_h >= 0 && pad_w >= 0, "padding must be >= 0");
    need(groups >= 1 && in_channels % groups == 0 && out_channels % groups == 0,
         "groups must divide both the input channels and the output channels");
    need(in_h + 2 * pad_h >= dilation_h * (kernel_h - 1) + 1 && in_w + 2 * pad_w >= dilation_w * (kernel_w - 1) + 1,
         "the (dilated) filter is larger than the padded input; pad more or use a smaller filter");
}

std::string ConvGeometry::str() const {
    // "a" or "a,b" when the two spatial dimensions differ
    const auto pair = [](std::int64_t a, std::int64_t b) {
        std::ostringstream text;
        text << a;
        if (a != b) text << ',' << b;
        return text.str();
    };
    std::ostringstream out;
    out << 'N' << batch << " C" << in_channels << ' ' << in_h << 'x' << in_w << " -> K" << out_channels << ' '
        << kernel_h << 'x' << kernel_w << " s" << pair(stride_h, stride_w) << " p" << pair(pad_h, pad_w) << " d"
        << pair(dilation_h, dilation_w) << " g" << groups;
    return out.str();
}

const std::vector<ConvAlgorithm>& conv_algorithms() {
    static const std::vector<ConvAlgorithm> table = {
        {ConvAlgo::Direct, "direct", "the definition's nested loops (the oracle)"},
        {ConvAlgo::Im2col, "im2col", "copy receptive fields into columns, then one GEMM"},
        {ConvAlgo::WinogradF2, "winograd_f2", "F(2x2,3x3): 16 multiplies per 2x2 output tile instead of 36"},
        {ConvAlgo::WinogradF4, "winograd_f4", "F(4x4,3x3): 36 multiplies per 4x4 output tile instead of 144"},
        {ConvAlgo::Fft, "fft", "pointwise products of radix-2 FFTs"},
        {ConvAlgo::FftFftw, "fft_fftw", "the same products, FFTW's transforms (peer library)"},
        {ConvAlgo::ImplicitGemm, "implicit_gemm", "im2col's GEMM reading shifted runs of the padded image in place"},
    };
    return table;
}

const ConvAlgorithm& find_conv_algorithm(const std::string& name) {
    std::string names;
    for (const auto& a : conv_algorithms()) {
        if (a.name == name) return a;
        names += (names.empty() ? "" : ", ") + a.name;
    }
    throw Error("unknown convolution algorithm '" + name + "'; the algorithms are " + names);
}

const ConvAlgorithm& conv_algorithm(ConvAlgo algo) { return conv_algorithms().at(static_cast<std::size_t>(algo)); }

std::string why_unsupported(ConvAlgo algo, const ConvGeometry& g) {
    const bool winograd = algo == ConvAlgo::WinogradF2 || algo == ConvAlgo::WinogradF4;
    if (winograd && (g.kernel_h != 3 || g.kernel_w != 3))
        return "Winograd F(m,3) needs a 3x3 filter";
    if (winograd && (g.stride_h != 1 || g.stride_w != 1 || g.dilation_h != 1 || g.dilation_w != 1))
        return "Winograd needs stride 1 and dilation 1";
    if (algo == ConvAlgo::FftFftw && !fft::fftw_available())
        return "this build has no FFTW (apt-get install libfftw3-dev, then meson setup --reconfigure build)";
    return "";
}

namespace {
void require_supported(ConvAlgo algo, const ConvGeometry& g) {
    g.validate();
    if (const std::string why = why_unsupported(algo, g); !why.empty())
        throw Error("conv2d " + g.str() + ": " + conv_algorithm(algo).name + " cannot run this convolution (" + why +
                    "); choose another algorithm");
}
}  // namespace

template <class T>
void add_plane_bias(T* y, const T* bias, std::int64_t planes, std::int64_t channels, std::int64_t plane) {
    if constexpr (std::is_same_v<T, float>) {
        kernels::add_channel_bias(y, bias, planes / channels, channels, plane);
    } else {
        parallel_for(planes, 8, [&](std::int64_t first, std::int64_t last) {
            for (std::int64_t i = first; i < last; ++i) {
                const T b = bias[i % channels];
                for (std::int64_t j = 0; j < plane; ++j) y[i * plane + j] += b;
            }
        });
    }
}

template <class T>
void forward(ConvAlgo algo, const ConvGeometry& g, const T* x, const T* w, T* y, const T* bias) {
    require_supported(algo, g);
    switch (algo) {  // the two that add the bias themselves
        case ConvAlgo::Im2col: return im2col::forward(g, x, w, y, bias);
        case ConvAlgo::ImplicitGemm: return implicit_gemm::forward(g, x, w, y, bias);
        case ConvAlgo::Direct: direct::forward(g, x, w, y); break;
        case ConvAlgo::WinogradF2: winograd::forward(2, g, x, w, y); break;
        case ConvAlgo::WinogradF4: winograd::forward(4, g, x, w, y); break;
        case ConvAlgo::Fft: fft::forward(fft::FftBackend::Ours, g, x, w, y); break;
        case ConvAlgo::FftFftw: fft::forward(fft::FftBackend::Fftw, g, x, w, y); break;
    }
    if (bias) add_plane_bias(y, bias, g.batch * g.out_channels, g.out_channels, g.out_h() * g.out_w());
}

template <class T>
void backward_data(ConvAlgo algo, const ConvGeometry& g, const T* dy, const T* w, T* dx) {
    require_supported(algo, g);
    switch (algo) {
        case ConvAlgo::Direct: return direct::backward_data(g, dy, w, dx);
        case ConvAlgo::Im2col: return im2col::backward_data(g, dy, w, dx);
        case ConvAlgo::WinogradF2: return winograd::backward_data(2, g, dy, w, dx);
        case ConvAlgo::WinogradF4: return winograd::backward_data(4, g, dy, w, dx);
        case ConvAlgo::Fft: return fft::backward_data(fft::FftBackend::Ours, g, dy, w, dx);
        case ConvAlgo::FftFftw: return fft::backward_data(fft::FftBackend::Fftw, g, dy, w, dx);
        case ConvAlgo::ImplicitGemm: return implicit_gemm::backward_data(g, dy, w, dx);
    }
}

template <class T>
void backward_weight(ConvAlgo algo, const ConvGeometry& g, const T* x, const T* dy, T* dw) {
    require_supported(algo, g);
    switch (algo) {
        case ConvAlgo::Direct: return direct::backward_weight(g, x, dy, dw);
        case ConvAlgo::Im2col: return im2col::backward_weight(g, x, dy, dw);
        case ConvAlgo::WinogradF2: return winograd::backward_weight(2, g, x, dy, dw);
        case ConvAlgo::WinogradF4: return winograd::backward_weight(4, g, x, dy, dw);
        case ConvAlgo::Fft: return fft::backward_weight(fft::FftBackend::Ours, g, x, dy, dw);
        case ConvAlgo::FftFftw: return fft::backward_weight(fft::FftBackend::Fftw, g, x, dy, dw);
        case ConvAlgo::ImplicitGemm: return implicit_gemm::backward_weight(g, x, dy, dw);
    }
}

template void forward<float>(ConvAlgo, const ConvGeometry&, const float*, const float*, float*, const float*);
template void forward<double>(ConvAlgo, const ConvGeometry&, const double*, const double*, double*, const double*);
template void add_plane_bias<float>(float*, const float*, std::int64_t, std::int64_t, std::int64_t);
template void add_plane_bias<double>(double*, const double*, std::int64_t, std::int64_t, std::int64_t);
template void backward_data<float>(ConvAlgo, const ConvGeometry&, const float*, const float*, float*);
template void backward_data<double>(ConvAlgo, const ConvGeometry&, const double*, const double*, double*);
template void backward_weight<float>(ConvAlgo, const ConvGeometry&, const float*, const float*, float*);
template void backward_weight<double>(ConvAlgo, const ConvGeometry&, const double*, const double*, double*);

std::int64_t multiplies() { return g_multiplies.load(); }
void reset_multiplies() { g_multiplies = 0; }
void count_multiplies(std::int64_t n) { g_multiplies += n; }

}  // namespace gl::kernels::conv
