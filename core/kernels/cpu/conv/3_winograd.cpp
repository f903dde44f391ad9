// 3. Winograd's minimal filtering F(m x m, 3 x 3), after Lavin & Gray (2015).
//
// An output tile of m x m needs an input tile of a x a, a = m + 2. Transform the input
// tile, V = B^T d B, and the filter, U = G g G^T (both a x a); multiply them element by
// element, summing over input channels, M = sum_c U[k,c] (.) V[c]; transform back,
// Y = A^T M A. The element-wise product costs a^2 multiplies per tile per (k, c) pair
// against m^2 * 9 for the definition: 16 vs 36 for F(2x2,3x3) (2.25x fewer), 36 vs 144
// for F(4x4,3x3) (4x fewer). The transforms multiply by constants only; they are
// shared by all K filters (input) or all tiles (filter).
//
// The backward passes are the adjoints of those three linear steps:
//   dM = A dY A^T,  dV[c] = sum_k U[k,c] (.) dM[k],  dd = B dV B^T (added into dx);
//   dU[k,c] = sum over tiles of dM[k] (.) V[c],  dg = G^T dU G.
// They cost the same a^2 multiplies per tile per (k, c) pair.
#include <algorithm>
#include <array>
#include <vector>

#include "base/error.hpp"  // the handout's stubs throw gl::NotImplemented
#include "kernels/cpu/conv/conv.hpp"
#include "parallel/thread_pool.hpp"

namespace gl::kernels::conv::winograd {

// The F(2x2, 3x3) transforms, written out so that their few adds are plain to see:
// B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1], G = [1 0 0; 1/2 1/2 1/2; 1/2 -1/2 1/2; 0 0 1],
// A^T = [1 1 1 0; 0 1 -1 -1].
template <class T>
void f2_input_transform(const T* d, T* v) {
    // LAB 11 BEGIN: Winograd input transform, V = B^T d B of a 4x4 tile
    T t[16];  // B^T d: combine rows
    for (int j = 0; j < 4; ++j) {
        t[0 * 4 + j] = d[0 * 4 + j] - d[2 * 4 + j];
        t[1 * 4 + j] = d[1 * 4 + j] + d[2 * 4 + j];
        t[2 * 4 + j] = d[2 * 4 + j] - d[1 * 4 + j];
        t[3 * 4 + j] = d[1 * 4 + j] - d[3 * 4 + j];
    }
    for (int i = 0; i < 4; ++i) {  // (B^T d) B: combine columns the same way
        v[i * 4 + 0] = t[i * 4 + 0] - t[i * 4 + 2];
        v[i * 4 + 1] = t[i * 4 + 1] + t[i * 4 + 2];
        v[i * 4 + 2] = t[i * 4 + 2] - t[i * 4 + 1];
        v[i * 4 + 3] = t[i * 4 + 1] - t[i * 4 + 3];
    }
    // LAB 11 END
}

template <class T>
void f2_filter_transform(const T* g, T* u) {
    // LAB 11 BEGIN: Winograd filter transform, U = G g G^T of a 3x3 filter (4x4)
    T t[12];  // G g: 4 x 3
    for (int j = 0; j < 3; ++j) {
        t[0 * 3 + j] = g[0 * 3 + j];
        t[1 * 3 + j] = (g[0 * 3 + j] + g[1 * 3 + j] + g[2 * 3 + j]) / 2;
        t[2 * 3 + j] = (g[0 * 3 + j] - g[1 * 3 + j] + g[2 * 3 + j]) / 2;
        t[3 * 3 + j] = g[2 * 3 + j];
    }
    for (int i = 0; i < 4; ++i) {  // (G g) G^T: 4 x 4
        u[i * 4 + 0] = t[i * 3 + 0];
        u[i * 4 + 1] = (t[i * 3 + 0] + t[i * 3 + 1] + t[i * 3 + 2]) / 2;
        u[i * 4 + 2] = (t[i * 3 + 0] - t[i * 3 + 1] + t[i * 3 + 2]) / 2;
        u[i * 4 + 3] = t[i * 3 + 2];
    }
    // LAB 11 END
}

template <class T>
void f2_output_transform(const T* m, T* y) {
    // LAB 11 BEGIN: Winograd output transform, Y = A^T M A of a 4x4 product (2x2)
    T t[8];  // A^T M: 2 x 4
    for (int j = 0; j < 4; ++j) {
        t[0 * 4 + j] = m[0 * 4 + j] + m[1 * 4 + j] + m[2 * 4 + j];
        t[1 * 4 + j] = m[1 * 4 + j] - m[2 * 4 + j] - m[3 * 4 + j];
    }
    for (int i = 0; i < 2; ++i) {  // (A^T M) A: 2 x 2
        y[i * 2 + 0] = t[i * 4 + 0] + t[i * 4 + 1] + t[i * 4 + 2];
        y[i * 2 + 1] = t[i * 4 + 1] - t[i * 4 + 2] - t[i * 4 + 3];
    }
    // LAB 11 END
}

namespace {

constexpr int kMaxAlpha = 6;
constexpr int kMaxTile = kMaxAlpha * kMaxAlpha;

// The three matrices of F(m x m, 3 x 3), row-major: B^T (a x a), G (a x 3), A^T (m x a).
struct Transforms {
    int m = 0, alpha = 0;
    std::vector<double> BT, G, AT;
};

const Transforms& transforms(int m) {
    static const Transforms f2{2, 4,
                               {1, 0, -1, 0, 0, 1, 1, 0, 0, -1, 1, 0, 0, 1, 0, -1},
                               {1, 0, 0, 0.5, 0.5, 0.5, 0.5, -0.5, 0.5, 0, 0, 1},
                               {1, 1, 1, 0, 0, 1, -1, -1}};
    // Lavin & Gray's F(4x4, 3x3), interpolation points 0, +-1, +-2, infinity.
    static const Transforms f4{4, 6,
                               {4, 0, -5, 0, 1, 0,  0, -4, -4, 1, 1, 0,  0, 4, -4, -1, 1, 0,
                                0, -2, -1, 2, 1, 0, 0, 2, -1, -2, 1, 0,  0, 4, 0, -5, 0, 1},
                               {1.0 / 4, 0, 0,  -1.0 / 6, -1.0 / 6, -1.0 / 6,  -1.0 / 6, 1.0 / 6, -1.0 / 6,
                                1.0 / 24, 1.0 / 12, 1.0 / 6,  1.0 / 24, -1.0 / 12, 1.0 / 6,  0, 0, 1},
                               {1, 1, 1, 1, 1, 0,  0, 1, -1, 2, -2, 0,  0, 1, 1, 4, 4, 0,  0, 1, -1, 8, -8, 1}};
    return m == 2 ? f2 : f4;
}

// out = L X L^T for L (rows x cols) and X (cols x cols); with transpose, out = L^T X L
// for X (rows x rows), giving cols x cols. The generic form of every transform above.
template <class T>
void sandwich(const std::vector<double>& L, int rows, int cols, bool transpose, const T* X, T* out) {
    const int n_in = transpose ? rows : cols, n_out = transpose ? cols : rows;
    const auto l = [&](int i, int j) { return static_cast<T>(transpose ? L[j * cols + i] : L[i * cols + j]); };
    T t[kMaxTile];  // L X (n_out x n_in)
    for (int i = 0; i < n_out; ++i)
        for (int j = 0; j < n_in; ++j) {
            T acc = 0;
            for (int e = 0; e < n_in; ++e) acc += l(i, e) * X[e * n_in + j];
            t[i * n_in + j] = acc;
        }
    for (int i = 0; i < n_out; ++i)
        for (int j = 0; j < n_out; ++j) {
            T acc = 0;
            for (int e = 0; e < n_in; ++e) acc += t[i * n_in + e] * l(j, e);
            out[i * n_out + j] = acc;
        }
}

// The forward transforms of F(m, 3): F(2x2, 3x3) through the explicit functions above,
// F(4x4, 3x3) through the matrices.
template <class T>
void input_transform(const Transforms& f, const T* d, T* v) {
    if (f.m == 2) return f2_input_transform(d, v);
    sandwich(f.BT, f.alpha, f.alpha, false, d, v);
}
template <class T>
void filter_transform(const Transforms& f, const T* g, T* u) {
    if (f.m == 2) return f2_filter_transform(g, u);
    sandwich(f.G, f.alpha, 3, false, g, u);
}
template <class T>
void output_transform(const Transforms& f, const T* m, T* y) {
    if (f.m == 2) return f2_output_transform(m, y);
    sandwich(f.AT, f.m, f.alpha, false, m, y);
}

// Where tiles sit: tile (th, tw) produces outputs [th m, th m + m) x [tw m, tw m + m) and
// reads input rows from th m - pad (the padded image), a rows and columns.
struct Tiling {
    std::int64_t rows, cols;  // tiles down and across (the last ones may stick out)
    Tiling(const ConvGeometry& g, int m) : rows((g.out_h() + m - 1) / m), cols((g.out_w() + m - 1) / m) {}
    std::int64_t count() const { return rows * cols; }
};

// Reads the a x a input tile at (row0, col0) of one channel plane, zeros outside.
template <class T>
void load_tile(const ConvGeometry& g, const T* plane, std::int64_t row0, std::int64_t col0, int alpha, T* d) {
    for (int i = 0; i < alpha; ++i)
        for (int j = 0; j < alpha; ++j) {
            const std::int64_t ih = row0 + i, iw = col0 + j;
            const bool inside = ih >= 0 && ih < g.in_h && iw >= 0 && iw < g.in_w;
            d[i * alpha + j] = inside ? plane[ih * g.in_w + iw] : T(0);
        }
}

// Adds an a x a tile into one channel plane at (row0, col0), dropping what falls outside.
template <class T>
void add_tile(const ConvGeometry& g, const T* d, std::int64_t row0, std::int64_t col0, int alpha, T* plane) {
    for (int i = 0; i < alpha; ++i)
        for (int j = 0; j < alpha; ++j) {
            const std::int64_t ih = row0 + i, iw = col0 + j;
            if (ih >= 0 && ih < g.in_h && iw >= 0 && iw < g.in_w) plane[ih * g.in_w + iw] += d[i * alpha + j];
        }
}

// U[(k Cg + c) a^2 + e]: every filter of @p group transformed.
template <class T>
std::vector<T> transformed_filters(const Transforms& f, const ConvGeometry& g, const T* w, std::int64_t group) {
    const std::int64_t Kg = g.group_out(), Cg = g.group_in(), a2 = f.alpha * f.alpha;
    std::vector<T> U(static_cast<std::size_t>(Kg * Cg * a2));
    for (std::int64_t kc = 0; kc < Kg * Cg; ++kc) filter_transform(f, w + (group * Kg * Cg + kc) * 9, U.data() + kc * a2);
    return U;
}

// V[c a^2 + e]: the input tile (th, tw) of image n, every channel of @p group, transformed.
template <class T>
void transformed_inputs(const Transforms& f, const ConvGeometry& g, const T* x, std::int64_t n, std::int64_t group,
                        std::int64_t th, std::int64_t tw, T* V) {
    const std::int64_t a2 = f.alpha * f.alpha;
    T d[kMaxTile];
    for (std::int64_t c = 0; c < g.group_in(); ++c) {
        const T* plane = x + (n * g.in_channels + group * g.group_in() + c) * g.in_h * g.in_w;
        load_tile(g, plane, th * f.m - g.pad_h, tw * f.m - g.pad_w, f.alpha, d);
        input_transform(f, d, V + c * a2);
    }
}

// dM[k a^2 + e] = A dY A^T of the output tile (th, tw) of every filter of @p group
// (outputs past the edge count as zero gradient).
template <class T>
void transformed_output_grads(const Transforms& f, const ConvGeometry& g, const T* dy, std::int64_t n,
                              std::int64_t group, std::int64_t th, std::int64_t tw, T* dM) {
    const std::int64_t P = g.out_h(), Q = g.out_w(), a2 = f.alpha * f.alpha;
    T tile[kMaxTile];
    for (std::int64_t k = 0; k < g.group_out(); ++k) {
        const T* plane = dy + (n * g.out_channels + group * g.group_out() + k) * P * Q;
        for (int i = 0; i < f.m; ++i)
            for (int j = 0; j < f.m; ++j) {
                const std::int64_t p = th * f.m + i, q = tw * f.m + j;
                tile[i * f.m + j] = p < P && q < Q ? plane[p * Q + q] : T(0);
            }
        sandwich(f.AT, f.m, f.alpha, true, tile, dM + k * a2);
    }
}

}  // namespace

template <class T>
void forward(int m, const ConvGeometry& g, const T* x, const T* w, T* y) {
    const Transforms& f = transforms(m);
    const std::int64_t Kg = g.group_out(), Cg = g.group_in(), a2 = f.alpha * f.alpha;
    const std::int64_t P = g.out_h(), Q = g.out_w();
    const Tiling tiles(g, m);
    for (std::int64_t group = 0; group < g.groups; ++group) {
        const std::vector<T> U = transformed_filters(f, g, w, group);
        parallel_for(g.batch * tiles.count(), 1, [&](std::int64_t begin, std::int64_t end) {
            std::vector<T> V(static_cast<std::size_t>(Cg * a2));
            T M[kMaxTile], out[kMaxTile];
            std::int64_t count = 0;
            for (std::int64_t nt = begin; nt < end; ++nt) {
                const std::int64_t n = nt / tiles.count(), th = nt % tiles.count() / tiles.cols, tw = nt % tiles.cols;
                transformed_inputs(f, g, x, n, group, th, tw, V.data());
                for (std::int64_t k = 0; k < Kg; ++k) {
                    std::fill(M, M + a2, T(0));
                    for (std::int64_t c = 0; c < Cg; ++c) {  // the only multiplies that grow with K and C
                        const T* u = U.data() + (k * Cg + c) * a2;
                        const T* v = V.data() + c * a2;
                        for (std::int64_t e = 0; e < a2; ++e) M[e] += u[e] * v[e];
                    }
                    count += Cg * a2;
                    output_transform(f, M, out);
                    T* plane = y + (n * g.out_channels + group * Kg + k) * P * Q;
                    for (int i = 0; i < m && th * m + i < P; ++i)
                        for (int j = 0; j < m && tw * m + j < Q; ++j) plane[(th * m + i) * Q + tw * m + j] = out[i * m + j];
                }
            }
            count_multiplies(count);
        });
    }
}

template <class T>
void backward_data(int m, const ConvGeometry& g, const T* dy, const T* w, T* dx) {
    const Transforms& f = transforms(m);
    const std::int64_t Kg = g.group_out(), Cg = g.group_in(), a2 = f.alpha * f.alpha;
    const Tiling tiles(g, m);
    std::fill(dx, dx + g.input_size(), T(0));
    for (std::int64_t group = 0; group < g.groups; ++group) {
        const std::vector<T> U = transformed_filters(f, g, w, group);
        // Tiles of one image overlap in dx, so a task owns whole images.
        parallel_for(g.batch, 1, [&](std::int64_t begin, std::int64_t end) {
            std::vector<T> dM(static_cast<std::size_t>(Kg * a2));
            T dV[kMaxTile], dd[kMaxTile];
            std::int64_t count = 0;
            for (std::int64_t n = begin; n < end; ++n)
                for (std::int64_t th = 0; th < tiles.rows; ++th)
                    for (std::int64_t tw = 0; tw < tiles.cols; ++tw) {
                        transformed_output_grads(f, g, dy, n, group, th, tw, dM.data());
                        for (std::int64_t c = 0; c < Cg; ++c) {
                            std::fill(dV, dV + a2, T(0));
                            for (std::int64_t k = 0; k < Kg; ++k) {
                                const T* u = U.data() + (k * Cg + c) * a2;
                                const T* dm = dM.data() + k * a2;
                                for (std::int64_t e = 0; e < a2; ++e) dV[e] += u[e] * dm[e];
                            }
                            count += Kg * a2;
                            sandwich(f.BT, f.alpha, f.alpha, true, dV, dd);
                            T* plane = dx + (n * g.in_channels + group * Cg + c) * g.in_h * g.in_w;
                            add_tile(g, dd, th * m - g.pad_h, tw * m - g.pad_w, f.alpha, plane);
                        }
                    }
            count_multiplies(count);
        });
    }
}

template <class T>
void backward_weight(int m, const ConvGeometry& g, const T* x, const T* dy, T* dw) {
    const Transforms& f = transforms(m);
    const std::int64_t Kg = g.group_out(), Cg = g.group_in(), a2 = f.alpha * f.alpha;
    const Tiling tiles(g, m);
    const int threads = static_cast<int>(std::min<std::int64_t>(get_num_threads(), g.batch));
    for (std::int64_t group = 0; group < g.groups; ++group) {
        // dU summed over tiles and images; each thread sums its own images, then they add up.
        std::vector<std::vector<T>> dU(static_cast<std::size_t>(threads),
                                       std::vector<T>(static_cast<std::size_t>(Kg * Cg * a2), T(0)));
        parallel_run(threads, [&](int t) {
            std::vector<T> V(static_cast<std::size_t>(Cg * a2)), dM(static_cast<std::size_t>(Kg * a2));
            T* sum = dU[static_cast<std::size_t>(t)].data();
            std::int64_t count = 0;
            for (std::int64_t n = t; n < g.batch; n += threads)
                for (std::int64_t th = 0; th < tiles.rows; ++th)
                    for (std::int64_t tw = 0; tw < tiles.cols; ++tw) {
                        transformed_inputs(f, g, x, n, group, th, tw, V.data());
                        transformed_output_grads(f, g, dy, n, group, th, tw, dM.data());
                        for (std::int64_t k = 0; k < Kg; ++k)
                            for (std::int64_t c = 0; c < Cg; ++c) {
                                T* du = sum + (k * Cg + c) * a2;
                                for (std::int64_t e = 0; e < a2; ++e) du[e] += dM[k * a2 + e] * V[c * a2 + e];
                            }
                        count += Kg * Cg * a2;
                    }
            count_multiplies(count);
        });
        for (int t = 1; t < threads; ++t)
            for (std::size_t i = 0; i < dU[0].size(); ++i) dU[0][i] += dU[static_cast<std::size_t>(t)][i];
        for (std::int64_t kc = 0; kc < Kg * Cg; ++kc)
            sandwich(f.G, f.alpha, 3, true, dU[0].data() + kc * a2, dw + (group * Kg * Cg + kc) * 9);
    }
}

template void f2_input_transform<float>(const float*, float*);
template void f2_input_transform<double>(const double*, double*);
template void f2_filter_transform<float>(const float*, float*);
template void f2_filter_transform<double>(const double*, double*);
template void f2_output_transform<float>(const float*, float*);
template void f2_output_transform<double>(const double*, double*);
template void forward<float>(int, const ConvGeometry&, const float*, const float*, float*);
template void forward<double>(int, const ConvGeometry&, const double*, const double*, double*);
template void backward_data<float>(int, const ConvGeometry&, const float*, const float*, float*);
template void backward_data<double>(int, const ConvGeometry&, const double*, const double*, double*);
template void backward_weight<float>(int, const ConvGeometry&, const float*, const float*, float*);
template void backward_weight<double>(int, const ConvGeometry&, const double*, const double*, double*);

}  // namespace gl::kernels::conv::winograd
