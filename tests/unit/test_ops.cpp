// Unit tests: forward values and gradients of every op (the gradients of the ops that
// Lab 01 leaves to students are also checked by the graded tests).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "autograd/gradcheck.hpp"
#include "ops/op_cases.hpp"
#include "ops/ops.hpp"

namespace gl {
namespace {

using ::testing::HasSubstr;

std::vector<float> values(const Tensor& t) { return t.to_vector<float>(); }

TEST(Ops, BroadcastingArithmetic) {
    const Tensor a = from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3});
    const Tensor row = from_vector<float>({10, 20, 30}, {3});
    const Tensor col = from_vector<float>({100, 200}, {2, 1});
    EXPECT_EQ(values(a + row), (std::vector<float>{11, 22, 33, 14, 25, 36}));
    EXPECT_EQ(values(a - col), (std::vector<float>{-99, -98, -97, -196, -195, -194}));
    EXPECT_EQ(values(a * row), (std::vector<float>{10, 40, 90, 40, 100, 180}));
    EXPECT_EQ(values(a * 2.0), (std::vector<float>{2, 4, 6, 8, 10, 12}));
    EXPECT_EQ(values(-a), (std::vector<float>{-1, -2, -3, -4, -5, -6}));
    EXPECT_EQ((row + col).shape(), (Shape{2, 3}));
    EXPECT_EQ(values(t(a) + t(a)), (std::vector<float>{2, 8, 4, 10, 6, 12})) << "strided operands";
}

TEST(Ops, ShapeErrorsNameTheShapes) {
    EXPECT_THAT([] { zeros({2, 3}) + zeros({2}); },
                ::testing::ThrowsMessage<Error>(HasSubstr("[2, 3] and [2] cannot be broadcast")));
    EXPECT_THAT([] { matmul(zeros({2, 3}), zeros({2, 3})); },
                ::testing::ThrowsMessage<Error>(HasSubstr("inner dimensions differ")));
    EXPECT_THAT([] { zeros({2}) + zeros({2}, DType::Float64); },
                ::testing::ThrowsMessage<Error>(HasSubstr("different dtypes")));
    EXPECT_THAT([] { reshape(zeros({2, 3}), {4, -1}); }, ::testing::ThrowsMessage<Error>(HasSubstr("cannot infer")));
    EXPECT_THAT([] { cross_entropy(zeros({2, 3}), from_vector<std::int32_t>({0, 3}, {2})); },
                ::testing::ThrowsMessage<Error>(HasSubstr("target 3 at row 1 is not a class in [0, 3)")));
    EXPECT_THAT([] { cross_entropy(zeros({2, 3}), zeros({2})); },
                ::testing::ThrowsMessage<Error>(HasSubstr("int32 class indices")));
}

TEST(Ops, Reductions) {
    const Tensor a = from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3});
    EXPECT_FLOAT_EQ(sum(a).item(), 21);
    EXPECT_FLOAT_EQ(mean(a).item(), 3.5);
    EXPECT_EQ(values(sum(a, {0})), (std::vector<float>{5, 7, 9}));
    EXPECT_EQ(sum(a, {1}, true).shape(), (Shape{2, 1}));
    EXPECT_EQ(values(sum(a, {-1})), (std::vector<float>{6, 15}));
    EXPECT_EQ(values(mean(a, {0})), (std::vector<float>{2.5, 3.5, 4.5}));
    EXPECT_EQ(argmax(from_vector<float>({1, 9, 3, 7, 2, 0}, {2, 3})).to_vector<std::int32_t>(),
              (std::vector<std::int32_t>{1, 0}));
}

TEST(Ops, ShapeViews) {
    const Tensor a = from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3});
    const Tensor r = reshape(a, {3, -1});
    EXPECT_EQ(r.shape(), (Shape{3, 2}));
    EXPECT_EQ(r.storage(), a.storage()) << "reshaping a contiguous tensor is a view";
    EXPECT_EQ(values(reshape(t(a), {6})), (std::vector<float>{1, 4, 2, 5, 3, 6}));
    const Tensor e = expand(from_vector<float>({1, 2}, {2, 1}), {2, 3});
    EXPECT_EQ(e.strides(), (Shape{1, 0}));
    EXPECT_EQ(values(e), (std::vector<float>{1, 1, 1, 2, 2, 2}));
    EXPECT_EQ(transpose(zeros({2, 3, 4}), 0, 2).shape(), (Shape{4, 3, 2}));
}

TEST(Ops, MatmulValues) {
    const Tensor a = from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3});
    const Tensor b = from_vector<float>({7, 8, 9, 10, 11, 12}, {3, 2});
    EXPECT_EQ(values(matmul(a, b)), (std::vector<float>{58, 64, 139, 154}));
    EXPECT_EQ(values(matmul(t(b), t(a))), (std::vector<float>{58, 139, 64, 154}));
    EXPECT_EQ(values(matmul(zeros({2, 0}), zeros({0, 3}))), std::vector<float>(6, 0.0f));
}

TEST(Ops, ActivationsAndLosses) {
    EXPECT_EQ(values(relu(from_vector<float>({-1, 0, 2}, {3}))), (std::vector<float>{0, 0, 2}));
    // Stable for huge logits: no inf or nan, rows still sum to one in probability.
    const Tensor ls = log_softmax(from_vector<float>({1000, 1001, 1002}, {1, 3}));
    double total = 0;
    for (float v : values(ls)) {
        EXPECT_TRUE(std::isfinite(v));
        total += std::exp(v);
    }
    EXPECT_NEAR(total, 1.0, 1e-6);
    // Uniform logits: loss = log(C).
    EXPECT_NEAR(cross_entropy(zeros({4, 10}), from_vector<std::int32_t>({0, 1, 2, 3}, {4})).item(),
                std::log(10.0), 1e-6);
}

class OpGradients : public ::testing::TestWithParam<OpCase> {};

TEST_P(OpGradients, MatchFiniteDifferences) {
    const OpCase& c = GetParam();
    const GradcheckResult r = gradcheck(c.fn, make_op_case_inputs(c));
    EXPECT_TRUE(r.ok) << c.name << ": " << r.message;
    EXPECT_GT(r.checked, 0);
}

INSTANTIATE_TEST_SUITE_P(EveryOp, OpGradients, ::testing::ValuesIn(standard_op_cases()),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace gl
