#include "testkit/random.hpp"

#include "base/rng.hpp"
#include "numerics/convert.hpp"

namespace gl::testkit {

std::vector<float> random_floats(std::size_t n, std::uint64_t seed, double lo, double hi) {
    Rng rng(seed);
    std::vector<float> v(n);
    for (float& x : v) x = static_cast<float>(rng.uniform(lo, hi));
    return v;
}

std::vector<std::uint16_t> random_16bit(DType dtype, std::size_t n, std::uint64_t seed, double lo, double hi) {
    const std::vector<float> f = random_floats(n, seed, lo, hi);
    std::vector<std::uint16_t> out(n);
    numerics::from_float(dtype, f.data(), out.data(), n);
    return out;
}

}  // namespace gl::testkit
