#include "testkit/systolic_cases.hpp"

#include <limits>
#include <type_traits>

#include "base/rng.hpp"
#include "testkit/random.hpp"

namespace gl::testkit {

systolic::Matrix<std::int8_t> random_int8_matrix(std::int64_t rows, std::int64_t cols, std::uint64_t seed) {
    systolic::Matrix<std::int8_t> m(rows, cols);
    Rng rng(seed);
    for (std::int8_t& v : m.data) v = static_cast<std::int8_t>(static_cast<int>(rng.below(256)) - 128);
    return m;
}

systolic::Matrix<float> random_float_matrix(std::int64_t rows, std::int64_t cols, std::uint64_t seed) {
    systolic::Matrix<float> m(rows, cols);
    m.data = random_floats(m.data.size(), seed);
    return m;
}

namespace {

template <class Out, class Sum, class In>
systolic::Matrix<Out> reference(const systolic::Matrix<In>& A, const systolic::Matrix<In>& B) {
    if (A.cols != B.rows) throw Error("reference GEMM: A's columns and B's rows differ");
    systolic::Matrix<Out> C(A.rows, B.cols);
    for (std::int64_t i = 0; i < A.rows; ++i)
        for (std::int64_t j = 0; j < B.cols; ++j) {
            Sum sum = 0;
            for (std::int64_t k = 0; k < A.cols; ++k) sum += static_cast<Sum>(A.at(i, k)) * static_cast<Sum>(B.at(k, j));
            if constexpr (std::is_integral_v<Out>)
                if (sum < std::numeric_limits<Out>::min() || sum > std::numeric_limits<Out>::max())
                    throw Error("reference GEMM: a sum overflows the accumulator");
            C.at(i, j) = static_cast<Out>(sum);
        }
    return C;
}

}  // namespace

systolic::Matrix<std::int32_t> reference_int8_gemm(const systolic::Matrix<std::int8_t>& A,
                                                   const systolic::Matrix<std::int8_t>& B) {
    return reference<std::int32_t, std::int64_t>(A, B);
}

systolic::Matrix<double> reference_float_gemm(const systolic::Matrix<float>& A, const systolic::Matrix<float>& B) {
    return reference<double, double>(A, B);
}

}  // namespace gl::testkit
