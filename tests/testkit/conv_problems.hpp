/// @file
/// @brief Convolution problems for tests, benchmarks and the claims: a geometry in one
/// call, seeded buffers in float or double, and the relative error the checks compare.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/cpu/conv/conv.hpp"

namespace gl::testkit {

/// A square-stride, square-padding, square-dilation geometry: N C H W -> K R S.
kernels::conv::ConvGeometry conv_geometry(std::int64_t N, std::int64_t C, std::int64_t H, std::int64_t W,
                                          std::int64_t K, std::int64_t R, std::int64_t S, std::int64_t stride = 1,
                                          std::int64_t pad = 0, std::int64_t dilation = 1, std::int64_t groups = 1);

/// @p n values uniform in [-1, 1) from @p seed (the same numbers in float and double, up to rounding).
template <class T>
std::vector<T> random_values(std::int64_t n, std::uint64_t seed);

/// max |a - b| / max |b| (infinity when the sizes differ): the error measure of the
/// convolution checks, relative to the largest reference value.
template <class A, class B>
double max_relative_error(const std::vector<A>& a, const std::vector<B>& b) {
    if (a.size() != b.size()) return 1.0 / 0.0;
    double worst = 0, scale = 1e-30;
    for (std::size_t i = 0; i < a.size(); ++i) {
        const double d = static_cast<double>(a[i]) - static_cast<double>(b[i]);
        worst = worst > (d < 0 ? -d : d) ? worst : (d < 0 ? -d : d);
        const double m = static_cast<double>(b[i]) < 0 ? -static_cast<double>(b[i]) : static_cast<double>(b[i]);
        scale = scale > m ? scale : m;
    }
    return worst / scale;
}

}  // namespace gl::testkit
