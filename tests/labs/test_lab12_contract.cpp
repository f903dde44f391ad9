// Lab 12 contract tests: the whole contract of each graded function on random inputs.
// The bulk and per-channel quantizers (which call quantize_value) over every range and
// many scales and zero points; the observer for every channel count 1..9 over batches of
// random sizes, one of them with a NaN; the straight-through backward for random
// parameters and inputs placed on, just inside and just outside the range's ends. The
// student's code runs only inside graded::student; expected values are computed here.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "base/rng.hpp"
#include "graded.hpp"
#include "numerics/observer.hpp"
#include "numerics/quantize.hpp"
#include "ops/fake_quant.hpp"

namespace gl {
namespace {

using namespace gl::quant;

std::int32_t reference_q(float x, QParams p, QRange r) {
    const double q = std::nearbyint(static_cast<double>(x) / p.scale) + p.zero_point;
    return static_cast<std::int32_t>(std::min<double>(std::max<double>(q, r.qmin), r.qmax));
}

TEST(Lab12, ContractPerChannelQuantizeOfRandomWeights) {
    Rng rng(1201);
    const std::int64_t channels = 7, per = 33;
    std::vector<float> w(static_cast<std::size_t>(channels * per));
    for (auto& v : w) v = static_cast<float>(rng.normal() * std::exp2(rng.uniform(-6.0, 3.0)));
    std::vector<QParams> params;
    for (std::int64_t c = 0; c < channels; ++c)
        params.push_back({static_cast<float>(std::exp2(rng.uniform(-9.0, -1.0))),
                          static_cast<std::int32_t>(rng.uniform(-20.0, 20.0))});
    const auto q = graded::student<std::vector<std::int32_t>>("per_channel", [&] {
        std::vector<std::int8_t> out(w.size());
        quantize_per_channel(w.data(), channels, per, params, out.data());
        return std::vector<std::int32_t>(out.begin(), out.end());
    });
    ASSERT_EQ(q.size(), w.size());
    for (std::size_t i = 0; i < w.size(); ++i)
        ASSERT_EQ(q[i], reference_q(w[i], params[i / per], kInt8)) << "element " << i << " (channel " << i / per << ")";
}

TEST(Lab12, ContractObserverForEveryChannelCount) {
    Rng rng(1202);
    for (std::int64_t channels = 1; channels <= 9; ++channels) {
        std::vector<std::vector<float>> batches;
        for (int b = 0; b < 4; ++b) {
            std::vector<float> v(static_cast<std::size_t>(channels * (1 + rng.below(6))));
            for (auto& x : v) x = static_cast<float>(rng.uniform(-50.0, 50.0));
            batches.push_back(v);
        }
        batches[2][batches[2].size() / 2] = std::nanf("");  // refused, and changes nothing
        const auto got = graded::student<std::vector<std::pair<float, float>>>("ranges", [&] {
            MinMaxObserver o(channels);
            for (const auto& b : batches) {
                try {
                    o.observe(b.data(), static_cast<std::int64_t>(b.size()));
                } catch (const NotImplemented&) {
                    throw;  // the part to write, not the NaN batch's refusal
                } catch (const Error&) {
                }
            }
            return o.ranges(kInt8, QScheme::Symmetric);
        });
        ASSERT_EQ(static_cast<std::int64_t>(got.size()), channels);
        for (std::int64_t c = 0; c < channels; ++c) {
            float lo = INFINITY, hi = -INFINITY;
            for (int b : {0, 1, 3}) {
                const std::int64_t per = static_cast<std::int64_t>(batches[b].size()) / channels;
                for (std::int64_t i = 0; i < per; ++i) {
                    lo = std::min(lo, batches[b][c * per + i]);
                    hi = std::max(hi, batches[b][c * per + i]);
                }
            }
            EXPECT_EQ(got[c], (std::pair<float, float>{lo, hi})) << channels << " channels, channel " << c;
        }
    }
}

TEST(Lab12, ContractBackwardAtTheEndsOfRandomRanges) {
    Rng rng(1203);
    std::vector<QParams> params;
    std::vector<float> x, grad;
    for (int c = 0; c < 16; ++c) {
        const QParams p{static_cast<float>(std::exp2(rng.uniform(-8.0, 2.0))), static_cast<std::int32_t>(rng.uniform(0.0, 256.0))};
        params.push_back(p);
        const float lo = p.scale * static_cast<float>(0 - p.zero_point), hi = p.scale * static_cast<float>(255 - p.zero_point);
        for (float v : {lo, hi, std::nextafter(lo, -INFINITY), std::nextafter(hi, INFINITY), std::nextafter(lo, INFINITY),
                        std::nextafter(hi, -INFINITY), (lo + hi) / 2, lo - 1000.0f, hi + 1000.0f}) {
            x.push_back(v);
            grad.push_back(static_cast<float>(rng.uniform(-1.0, 1.0)));
        }
    }
    const auto dx = graded::student<std::vector<float>>("backward", [&] { return fake_quantize_backward(x, grad, params, kUint8); });
    ASSERT_EQ(dx.size(), x.size());
    for (std::size_t i = 0; i < x.size(); ++i) {
        const QParams p = params[i / 9];
        const float lo = p.scale * static_cast<float>(0 - p.zero_point), hi = p.scale * static_cast<float>(255 - p.zero_point);
        EXPECT_EQ(dx[i], x[i] >= lo && x[i] <= hi ? grad[i] : 0.0f) << "x " << x[i] << " range [" << lo << ", " << hi << "]";
    }
}

}  // namespace
}  // namespace gl
