#include "testkit/conv_problems.hpp"

#include "base/rng.hpp"

namespace gl::testkit {

kernels::conv::ConvGeometry conv_geometry(std::int64_t N, std::int64_t C, std::int64_t H, std::int64_t W,
                                          std::int64_t K, std::int64_t R, std::int64_t S, std::int64_t stride,
                                          std::int64_t pad, std::int64_t dilation, std::int64_t groups) {
    kernels::conv::ConvGeometry g;
    g.batch = N, g.in_channels = C, g.in_h = H, g.in_w = W, g.out_channels = K, g.kernel_h = R, g.kernel_w = S;
    g.stride_h = g.stride_w = stride, g.pad_h = g.pad_w = pad, g.dilation_h = g.dilation_w = dilation;
    g.groups = groups;
    return g;
}

template <class T>
std::vector<T> random_values(std::int64_t n, std::uint64_t seed) {
    Rng rng(seed);
    std::vector<T> v(static_cast<std::size_t>(n));
    for (auto& e : v) e = static_cast<T>(rng.uniform(-1, 1));
    return v;
}

template std::vector<float> random_values<float>(std::int64_t, std::uint64_t);
template std::vector<double> random_values<double>(std::int64_t, std::uint64_t);

}  // namespace gl::testkit
