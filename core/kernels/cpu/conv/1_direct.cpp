// 1. Direct convolution: the definition, loop by loop. Slow (every output reads its
// receptive field straight from x, with a bounds test per tap) but obviously right, so it
// is the oracle the other versions are tested against.
//
//   y[n, k, p, q] = sum over c < C/groups, r < R, s < S of
//                   w[k, c, r, s] * x[n, group(k) C/groups + c, p stride - pad + r dilation, ...]
//
// The backward passes run the same loops and scatter instead of gather. Work is split
// over threads so that no two threads write the same element.
#include <algorithm>

#include "kernels/cpu/conv/conv.hpp"
#include "parallel/thread_pool.hpp"

namespace gl::kernels::conv::direct {
namespace {

// Calls tap(ih, iw, r, s) for every filter tap of output (p, q) that lands inside the
// image (taps in the padding contribute nothing and are skipped); returns how many.
template <class Tap>
std::int64_t for_each_tap(const ConvGeometry& g, std::int64_t p, std::int64_t q, Tap&& tap) {
    std::int64_t taps = 0;
    for (std::int64_t r = 0; r < g.kernel_h; ++r) {
        const std::int64_t ih = p * g.stride_h - g.pad_h + r * g.dilation_h;
        if (ih < 0 || ih >= g.in_h) continue;
        for (std::int64_t s = 0; s < g.kernel_w; ++s) {
            const std::int64_t iw = q * g.stride_w - g.pad_w + s * g.dilation_w;
            if (iw < 0 || iw >= g.in_w) continue;
            tap(ih, iw, r, s);
            ++taps;
        }
    }
    return taps;
}

}  // namespace

template <class T>
void forward(const ConvGeometry& g, const T* x, const T* w, T* y) {
    const std::int64_t P = g.out_h(), Q = g.out_w(), Cg = g.group_in(), Kg = g.group_out();
    const std::int64_t R = g.kernel_h, S = g.kernel_w, H = g.in_h, W = g.in_w;
    // One task per (image, filter): each writes its own output plane.
    parallel_for(g.batch * g.out_channels, 1, [&](std::int64_t begin, std::int64_t end) {
        std::int64_t count = 0;
        for (std::int64_t nk = begin; nk < end; ++nk) {
            const std::int64_t n = nk / g.out_channels, k = nk % g.out_channels;
            const std::int64_t c0 = (k / Kg) * Cg;  // first input channel of k's group
            T* out = y + nk * P * Q;
            for (std::int64_t p = 0; p < P; ++p)
                for (std::int64_t q = 0; q < Q; ++q) {
                    T acc = 0;
                    for (std::int64_t c = 0; c < Cg; ++c) {
                        const T* plane = x + (n * g.in_channels + c0 + c) * H * W;
                        const T* filter = w + (k * Cg + c) * R * S;
                        count += for_each_tap(g, p, q, [&](std::int64_t ih, std::int64_t iw, std::int64_t r,
                                                           std::int64_t s) { acc += filter[r * S + s] * plane[ih * W + iw]; });
                    }
                    out[p * Q + q] = acc;
                }
        }
        count_multiplies(count);
    });
}

template <class T>
void backward_data(const ConvGeometry& g, const T* dy, const T* w, T* dx) {
    const std::int64_t P = g.out_h(), Q = g.out_w(), Cg = g.group_in(), Kg = g.group_out();
    const std::int64_t R = g.kernel_h, S = g.kernel_w, H = g.in_h, W = g.in_w;
    std::fill(dx, dx + g.input_size(), T(0));
    // One task per (image, group): the input channels a group's filters read are its own.
    parallel_for(g.batch * g.groups, 1, [&](std::int64_t begin, std::int64_t end) {
        std::int64_t count = 0;
        for (std::int64_t ng = begin; ng < end; ++ng) {
            const std::int64_t n = ng / g.groups, group = ng % g.groups;
            for (std::int64_t k = group * Kg; k < (group + 1) * Kg; ++k)
                for (std::int64_t p = 0; p < P; ++p)
                    for (std::int64_t q = 0; q < Q; ++q) {
                        const T grad = dy[((n * g.out_channels + k) * P + p) * Q + q];
                        for (std::int64_t c = 0; c < Cg; ++c) {
                            T* plane = dx + (n * g.in_channels + group * Cg + c) * H * W;
                            const T* filter = w + (k * Cg + c) * R * S;
                            count += for_each_tap(g, p, q, [&](std::int64_t ih, std::int64_t iw, std::int64_t r,
                                                               std::int64_t s) { plane[ih * W + iw] += filter[r * S + s] * grad; });
                        }
                    }
        }
        count_multiplies(count);
    });
}

template <class T>
void backward_weight(const ConvGeometry& g, const T* x, const T* dy, T* dw) {
    const std::int64_t P = g.out_h(), Q = g.out_w(), Cg = g.group_in(), Kg = g.group_out();
    const std::int64_t R = g.kernel_h, S = g.kernel_w, H = g.in_h, W = g.in_w;
    // One task per filter k: it alone writes dw[k].
    parallel_for(g.out_channels, 1, [&](std::int64_t begin, std::int64_t end) {
        std::int64_t count = 0;
        for (std::int64_t k = begin; k < end; ++k) {
            const std::int64_t c0 = (k / Kg) * Cg;
            T* filter_grad = dw + k * Cg * R * S;
            std::fill(filter_grad, filter_grad + Cg * R * S, T(0));
            for (std::int64_t n = 0; n < g.batch; ++n)
                for (std::int64_t p = 0; p < P; ++p)
                    for (std::int64_t q = 0; q < Q; ++q) {
                        const T grad = dy[((n * g.out_channels + k) * P + p) * Q + q];
                        for (std::int64_t c = 0; c < Cg; ++c) {
                            const T* plane = x + (n * g.in_channels + c0 + c) * H * W;
                            T* fg = filter_grad + c * R * S;
                            count += for_each_tap(g, p, q, [&](std::int64_t ih, std::int64_t iw, std::int64_t r,
                                                               std::int64_t s) { fg[r * S + s] += grad * plane[ih * W + iw]; });
                        }
                    }
        }
        count_multiplies(count);
    });
}

template void forward<float>(const ConvGeometry&, const float*, const float*, float*);
template void forward<double>(const ConvGeometry&, const double*, const double*, double*);
template void backward_data<float>(const ConvGeometry&, const float*, const float*, float*);
template void backward_data<double>(const ConvGeometry&, const double*, const double*, double*);
template void backward_weight<float>(const ConvGeometry&, const float*, const float*, float*);
template void backward_weight<double>(const ConvGeometry&, const double*, const double*, double*);

}  // namespace gl::kernels::conv::direct
