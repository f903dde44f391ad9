// 2. im2col + GEMM. Copy each output position's receptive field into one column of a
// matrix, and the convolution of a group becomes a single matrix product:
//
//   Y_g [K/groups, N P Q] = W_g [K/groups, (C/groups) R S] x col [(C/groups) R S, N P Q]
//
// so it runs at the speed of our tuned GEMM (kernels/gemm.hpp), at the price of copying
// each input element up to R S times. The backward passes are two more GEMMs:
//   dcol = W_g^T x dY_g, then col2im adds each column entry back where it came from;
//   dW_g = dY_g x col^T.
// Images go through in chunks so that col stays a few MB.
#include <algorithm>
#include <functional>
#include <vector>

#include "base/error.hpp"  // the handout's stubs throw gl::NotImplemented
#include "kernels/cpu/conv/conv.hpp"
#include "kernels/gemm.hpp"
#include "parallel/thread_pool.hpp"

namespace gl::kernels::conv::im2col {
namespace {

constexpr std::int64_t kMaxColElements = std::int64_t(1) << 22;  // 16 MB of float per chunk

// How many images go into one col matrix.
std::int64_t images_per_chunk(const ConvGeometry& g) {
    const std::int64_t per_image = g.group_in() * g.kernel_h * g.kernel_w * g.out_h() * g.out_w();
    return std::clamp<std::int64_t>(kMaxColElements / std::max<std::int64_t>(per_image, 1), 1, g.batch);
}

// Scratch matrices reused from call to call (col is tens of MB for a training batch:
// allocating it each time costs page faults). One set per thread and type.
template <class T>
struct Workspace {
    std::vector<T> col, out, partial;
    static Workspace& get(std::int64_t col_size, std::int64_t out_size, std::int64_t partial_size = 0) {
        thread_local Workspace w;
        w.col.resize(static_cast<std::size_t>(col_size));
        w.out.resize(static_cast<std::size_t>(out_size));
        w.partial.resize(static_cast<std::size_t>(partial_size));
        return w;
    }
};

// C = op(A) x op(B) through the default GEMM, counting its M N K multiplies.
template <class T>
void matmul(bool trans_a, bool trans_b, std::int64_t M, std::int64_t N, std::int64_t K, const T* A, const T* B, T* C) {
    gemm(dense_gemm_args(trans_a, trans_b, M, N, K, A, B, C));
    count_multiplies(M * N * K);
}

// Copies y[n0 .. n0+count, group's filters] to (or, with to_nchw, from) a [K/groups, count P Q]
// matrix: the layout the GEMM reads and writes.
template <class T>
void gather_output(const ConvGeometry& g, const T* y, std::int64_t group, std::int64_t n0, std::int64_t count, T* mat) {
    const std::int64_t PQ = g.out_h() * g.out_w(), Kg = g.group_out();
    for (std::int64_t k = 0; k < Kg; ++k)
        for (std::int64_t n = 0; n < count; ++n)
            std::copy_n(y + ((n0 + n) * g.out_channels + group * Kg + k) * PQ, PQ, mat + (k * count + n) * PQ);
}
template <class T>
void scatter_output(const ConvGeometry& g, const T* mat, std::int64_t group, std::int64_t n0, std::int64_t count, T* y) {
    const std::int64_t PQ = g.out_h() * g.out_w(), Kg = g.group_out();
    for (std::int64_t k = 0; k < Kg; ++k)
        for (std::int64_t n = 0; n < count; ++n)
            std::copy_n(mat + (k * count + n) * PQ, PQ, y + ((n0 + n) * g.out_channels + group * Kg + k) * PQ);
}

// With at least as many images as threads, the threads take whole images: each copies one
// image's receptive fields into its own col and runs a (one-thread) GEMM on it. The copy
// then runs on every thread instead of before the GEMM on one, and the output needs no
// copy: y[n, the group's filters] is already a dense [K/groups, P Q] matrix. With fewer
// images, the images go through in chunks and the threads share each chunk's GEMM.
bool one_image_per_thread(const ConvGeometry& g) { return g.batch >= get_num_threads(); }

// The offset of image n's [K/groups, P Q] block of the group's filters in y (or dy).
std::int64_t output_block(const ConvGeometry& g, std::int64_t n, std::int64_t group) {
    return (n * g.out_channels + group * g.group_out()) * g.out_h() * g.out_w();
}

}  // namespace

template <class T>
void im2col(const ConvGeometry& g, const T* x, std::int64_t group, std::int64_t n0, std::int64_t count, T* col) {
    // LAB 11 BEGIN: im2col, copy every receptive field into a column
    const std::int64_t P = g.out_h(), Q = g.out_w(), R = g.kernel_h, S = g.kernel_w;
    const std::int64_t columns = count * P * Q;  // one column per output position of the chunk
    for (std::int64_t c = 0; c < g.group_in(); ++c) {
        const std::int64_t channel = group * g.group_in() + c;
        for (std::int64_t r = 0; r < R; ++r)
            for (std::int64_t s = 0; s < S; ++s) {
                T* row = col + ((c * R + r) * S + s) * columns;  // this tap's row
                // Output columns [q_begin, q_end) read inside the image's row; the ones
                // before and after read the padding. Splitting the row this way once per
                // tap leaves a plain copy (contiguous when the stride is 1) in the loop.
                const std::int64_t shift = s * g.dilation_w - g.pad_w;  // iw = q stride + shift
                std::int64_t q_begin = 0, q_end = Q;
                while (q_begin < Q && q_begin * g.stride_w + shift < 0) ++q_begin;
                while (q_end > q_begin && (q_end - 1) * g.stride_w + shift >= g.in_w) --q_end;
                for (std::int64_t n = 0; n < count; ++n) {
                    const T* plane = x + ((n0 + n) * g.in_channels + channel) * g.in_h * g.in_w;
                    for (std::int64_t p = 0; p < P; ++p) {
                        const std::int64_t ih = p * g.stride_h - g.pad_h + r * g.dilation_h;
                        T* out = row + (n * P + p) * Q;
                        if (ih < 0 || ih >= g.in_h) {  // a padding row
                            std::fill(out, out + Q, T(0));
                            continue;
                        }
                        const T* in = plane + ih * g.in_w + shift;  // in[q stride] is x[ih, q stride + shift]
                        std::fill(out, out + q_begin, T(0));
                        for (std::int64_t q = q_begin; q < q_end; ++q) out[q] = in[q * g.stride_w];
                        std::fill(out + q_end, out + Q, T(0));
                    }
                }
            }
    }
    // LAB 11 END
}

template <class T>
void col2im(const ConvGeometry& g, const T* col, std::int64_t group, std::int64_t n0, std::int64_t count, T* dx) {
    // LAB 11 BEGIN: col2im, add every column entry back to the input element it came from
    const std::int64_t P = g.out_h(), Q = g.out_w(), R = g.kernel_h, S = g.kernel_w;
    const std::int64_t columns = count * P * Q;
    for (std::int64_t c = 0; c < g.group_in(); ++c) {
        const std::int64_t channel = group * g.group_in() + c;
        for (std::int64_t r = 0; r < R; ++r)
            for (std::int64_t s = 0; s < S; ++s) {
                const T* row = col + ((c * R + r) * S + s) * columns;
                for (std::int64_t n = 0; n < count; ++n) {
                    T* plane = dx + ((n0 + n) * g.in_channels + channel) * g.in_h * g.in_w;
                    for (std::int64_t p = 0; p < P; ++p) {
                        const std::int64_t ih = p * g.stride_h - g.pad_h + r * g.dilation_h;
                        if (ih < 0 || ih >= g.in_h) continue;  // a padding row: nothing to add to
                        for (std::int64_t q = 0; q < Q; ++q) {
                            const std::int64_t iw = q * g.stride_w - g.pad_w + s * g.dilation_w;
                            if (iw >= 0 && iw < g.in_w) plane[ih * g.in_w + iw] += row[(n * P + p) * Q + q];
                        }
                    }
                }
            }
    }
    // LAB 11 END
}

template <class T>
void forward(const ConvGeometry& g, const T* x, const T* w, T* y, const T* bias) {
    const std::int64_t PQ = g.out_h() * g.out_w(), Kg = g.group_out();
    const std::int64_t CRS = g.group_in() * g.kernel_h * g.kernel_w;  // rows of col
    if (one_image_per_thread(g)) {
        parallel_for(g.batch, 1, [&](std::int64_t begin, std::int64_t end) {
            std::vector<T>& col = Workspace<T>::get(CRS * PQ, 0).col;
            for (std::int64_t n = begin; n < end; ++n)
                for (std::int64_t group = 0; group < g.groups; ++group) {
                    im2col(g, x, group, n, 1, col.data());
                    T* block = y + output_block(g, n, group);
                    matmul(false, false, Kg, PQ, CRS, w + group * Kg * CRS, col.data(), block);
                    // The bias while the block is in cache (here the calling thread's share runs
                    // inline: add_plane_bias starts no threads inside a parallel region).
                    if (bias) add_plane_bias(block, bias + group * Kg, Kg, Kg, PQ);
                }
        });
        return;
    }
    const std::int64_t chunk = images_per_chunk(g);
    auto& ws = Workspace<T>::get(CRS * chunk * PQ, Kg * chunk * PQ);
    std::vector<T>&col = ws.col, &out = ws.out;
    for (std::int64_t n0 = 0; n0 < g.batch; n0 += chunk) {
        const std::int64_t count = std::min(chunk, g.batch - n0);
        for (std::int64_t group = 0; group < g.groups; ++group) {
            im2col(g, x, group, n0, count, col.data());
            matmul(false, false, Kg, count * PQ, CRS, w + group * Kg * CRS, col.data(), out.data());
            scatter_output(g, out.data(), group, n0, count, y);
        }
        if (bias) add_plane_bias(y + n0 * g.out_channels * PQ, bias, count * g.out_channels, g.out_channels, PQ);
    }
}

template <class T>
void backward_data(const ConvGeometry& g, const T* dy, const T* w, T* dx) {
    const std::int64_t PQ = g.out_h() * g.out_w(), Kg = g.group_out();
    const std::int64_t CRS = g.group_in() * g.kernel_h * g.kernel_w;
    if (one_image_per_thread(g)) {  // images write disjoint parts of dx: no thread waits for another
        const std::int64_t image = g.in_channels * g.in_h * g.in_w;
        parallel_for(g.batch, 1, [&](std::int64_t begin, std::int64_t end) {
            std::vector<T>& col = Workspace<T>::get(CRS * PQ, 0).col;
            std::fill(dx + begin * image, dx + end * image, T(0));
            for (std::int64_t n = begin; n < end; ++n)
                for (std::int64_t group = 0; group < g.groups; ++group) {
                    // dcol [CRS, PQ] = W_g^T x dY_n,g
                    matmul(true, false, CRS, PQ, Kg, w + group * Kg * CRS, dy + output_block(g, n, group), col.data());
                    col2im(g, col.data(), group, n, 1, dx);
                }
        });
        return;
    }
    const std::int64_t chunk = images_per_chunk(g);
    auto& ws = Workspace<T>::get(CRS * chunk * PQ, Kg * chunk * PQ);
    std::vector<T>&col = ws.col, &grad = ws.out;
    std::fill(dx, dx + g.input_size(), T(0));
    for (std::int64_t n0 = 0; n0 < g.batch; n0 += chunk) {
        const std::int64_t count = std::min(chunk, g.batch - n0);
        for (std::int64_t group = 0; group < g.groups; ++group) {
            gather_output(g, dy, group, n0, count, grad.data());
            // dcol [CRS, count PQ] = W_g^T x dY_g
            matmul(true, false, CRS, count * PQ, Kg, w + group * Kg * CRS, grad.data(), col.data());
            col2im(g, col.data(), group, n0, count, dx);
        }
    }
}

template <class T>
void backward_weight(const ConvGeometry& g, const T* x, const T* dy, T* dw) {
    const std::int64_t PQ = g.out_h() * g.out_w(), Kg = g.group_out();
    const std::int64_t CRS = g.group_in() * g.kernel_h * g.kernel_w;
    std::fill(dw, dw + g.weight_size(), T(0));
    if (one_image_per_thread(g)) {
        // Every image adds to all of dw: each thread sums its images into its own copy,
        // and the copies are added up at the end.
        const int threads = get_num_threads();
        std::vector<std::vector<T>> sums(static_cast<std::size_t>(threads), std::vector<T>(static_cast<std::size_t>(g.weight_size()), T(0)));
        parallel_run(threads, [&](int t) {
            auto& ws = Workspace<T>::get(CRS * PQ, 0, Kg * CRS);
            T* sum = sums[static_cast<std::size_t>(t)].data();
            for (std::int64_t n = g.batch * t / threads; n < g.batch * (t + 1) / threads; ++n)
                for (std::int64_t group = 0; group < g.groups; ++group) {
                    im2col(g, x, group, n, 1, ws.col.data());
                    // dW_g [Kg, CRS] += dY_n,g [Kg, PQ] x col^T
                    matmul(false, true, Kg, CRS, PQ, dy + output_block(g, n, group), ws.col.data(), ws.partial.data());
                    for (std::int64_t i = 0; i < Kg * CRS; ++i) sum[group * Kg * CRS + i] += ws.partial[static_cast<std::size_t>(i)];
                }
        });
        for (const auto& sum : sums) std::transform(dw, dw + g.weight_size(), sum.begin(), dw, std::plus<T>());
        return;
    }
    const std::int64_t chunk = images_per_chunk(g);
    auto& ws = Workspace<T>::get(CRS * chunk * PQ, Kg * chunk * PQ, Kg * CRS);
    std::vector<T>&col = ws.col, &grad = ws.out, &partial = ws.partial;
    for (std::int64_t n0 = 0; n0 < g.batch; n0 += chunk) {
        const std::int64_t count = std::min(chunk, g.batch - n0);
        for (std::int64_t group = 0; group < g.groups; ++group) {
            im2col(g, x, group, n0, count, col.data());
            gather_output(g, dy, group, n0, count, grad.data());
            // dW_g [Kg, CRS] += dY_g [Kg, count PQ] x col^T
            matmul(false, true, Kg, CRS, count * PQ, grad.data(), col.data(), partial.data());
            T* dw_group = dw + group * Kg * CRS;
            for (std::int64_t i = 0; i < Kg * CRS; ++i) dw_group[i] += partial[static_cast<std::size_t>(i)];
        }
    }
}

#define GL_CONV_IM2COL_INSTANTIATE(T)                                                                        \
    template void im2col<T>(const ConvGeometry&, const T*, std::int64_t, std::int64_t, std::int64_t, T*);    \
    template void col2im<T>(const ConvGeometry&, const T*, std::int64_t, std::int64_t, std::int64_t, T*);    \
    template void forward<T>(const ConvGeometry&, const T*, const T*, T*, const T*);                        \
    template void backward_data<T>(const ConvGeometry&, const T*, const T*, T*);                            \
    template void backward_weight<T>(const ConvGeometry&, const T*, const T*, T*);
GL_CONV_IM2COL_INSTANTIATE(float)
GL_CONV_IM2COL_INSTANTIATE(double)
#undef GL_CONV_IM2COL_INSTANTIATE

}  // namespace gl::kernels::conv::im2col
