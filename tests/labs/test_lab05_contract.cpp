// Lab 05 contract tests: every special value exactly, and the scaler's state after every call.
// float -> half on every NaN payload, every float in the subnormal-half range (sampled densely) and
// every rounding tie there, checked bit for bit against Eigen's half; half -> float on every NaN
// pattern, bit for bit; unscale_ with an inf or NaN in any tensor of the list (not only the last)
// and at any scale; the loss scaler's whole state after every step of random scripts; the
// master-weight update when a gradient comes and goes between steps. The student's code is called
// only through graded::student (graded.hpp), each call one small lambda that returns everything the
// checks read, so a checker that never loads it can decide.
#include <gtest/gtest.h>

#include <Eigen/Core>
#include <bit>
#include <cmath>
#include <limits>

#include "amp/loss_scaler.hpp"
#include "amp/master_weights.hpp"
#include "contract.hpp"
#include "graded.hpp"
#include "numerics/half.hpp"
#include "optim/optimizer.hpp"

namespace gl {
namespace {

std::string hex(std::uint32_t v) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "0x%x", v);
    return buf;
}

std::uint16_t eigen_half_bits(float f) { return Eigen::numext::bit_cast<std::uint16_t>(Eigen::half(f)); }

// Converts every float of @p in with the student's float -> half.
std::vector<std::uint16_t> to_half(const std::vector<float>& in) {
    auto run = [&]() -> std::vector<std::uint16_t> {
        std::vector<std::uint16_t> out(in.size());
        for (std::size_t i = 0; i < in.size(); ++i) out[i] = float_to_half_bits(in[i]);
        return out;
    };
    return graded::student<std::vector<std::uint16_t>>("float_to_half_bits", run);
}

TEST(Lab05, ContractHalfFromFloatNanPayloads) {
    // Every payload of the 10 bits a half keeps (the float's mantissa bits 22..13), with
    // random lower bits, quiet and signalling, both signs: the half keeps those 10 bits
    // and is quiet.
    Rng rng(51);
    std::vector<float> in;
    std::vector<std::uint16_t> want;
    for (std::uint32_t top = 0; top < 1024; ++top)
        for (std::uint32_t sign : {0u, 0x80000000u}) {
            const std::uint32_t low = static_cast<std::uint32_t>(rng.below(1u << 13)) | (top == 0 || top == 512 ? 1u : 0u);
            in.push_back(std::bit_cast<float>(sign | 0x7F800000u | (top << 13) | low));  // a NaN: mantissa != 0
            want.push_back(static_cast<std::uint16_t>((sign >> 16) | 0x7E00u | top));
        }
    const std::vector<std::uint16_t> got = to_half(in);
    int wrong = 0;
    for (std::size_t i = 0; i < in.size(); ++i)
        if (got[i] != want[i] && ++wrong <= 5)
            ADD_FAILURE() << "float NaN " << hex(std::bit_cast<std::uint32_t>(in[i])) << " -> half " << hex(want[i])
                          << " (quiet, the payload's top 10 bits kept), you returned " << hex(got[i]);
    EXPECT_EQ(wrong, 0) << wrong << " of " << in.size() << " NaN payloads wrong";
}

TEST(Lab05, ContractHalfFromFloatSubnormalRange) {
    // Floats from 2^-27 to 2^-14 (where halves are subnormal, and just below the
    // smallest one): a dense sample of each binade, and every exact tie between two
    // neighbouring subnormal halves, both signs.
    std::vector<float> in;
    for (std::uint32_t exponent = 100; exponent <= 113; ++exponent) {
        for (std::uint32_t m = 0; m < (1u << 23); m += 997) in.push_back(std::bit_cast<float>((exponent << 23) | m));
        if (exponent < 102 || exponent > 112) continue;
        const std::uint32_t shift = 126 - exponent;  // bits of (1.m) dropped for a subnormal half
        for (std::uint32_t kept = 0; kept < (1u << (24 - shift)); ++kept) {
            const std::uint32_t mantissa = (kept << shift) | (1u << (shift - 1));  // exactly halfway
            if (mantissa & 0x00800000u) in.push_back(std::bit_cast<float>((exponent << 23) | (mantissa & 0x007FFFFFu)));
        }
    }
    const std::size_t positive = in.size();
    for (std::size_t i = 0; i < positive; ++i) in.push_back(-in[i]);
    const std::vector<std::uint16_t> got = to_half(in);
    int wrong = 0;
    for (std::size_t i = 0; i < in.size(); ++i) {
        const std::uint16_t want = eigen_half_bits(in[i]);
        if (got[i] != want && ++wrong <= 5)
            ADD_FAILURE() << "float " << in[i] << " (" << hex(std::bit_cast<std::uint32_t>(in[i])) << ") -> half "
                          << hex(want) << ", you returned " << hex(got[i])
                          << " (subnormal halves round to nearest, ties to even; below 2^-25 is 0, above it up)";
    }
    EXPECT_EQ(wrong, 0) << wrong << " of " << in.size() << " floats wrong";
}

TEST(Lab05, ContractHalfToFloatNanPatterns) {
    auto run = [&]() -> std::vector<float> {
        std::vector<float> out;
        for (std::uint32_t m = 1; m < 1024; ++m)
            for (std::uint32_t sign : {0u, 0x8000u}) out.push_back(half_bits_to_float(static_cast<std::uint16_t>(sign | 0x7C00u | m)));
        return out;
    };
    const std::vector<float> got = graded::student<std::vector<float>>("half_bits_to_float", run);
    std::size_t i = 0;
    int wrong = 0;
    for (std::uint32_t m = 1; m < 1024; ++m)
        for (std::uint32_t sign : {0u, 0x8000u}) {
            const std::uint32_t want = (sign << 16) | 0x7F800000u | 0x00400000u | (m << 13);
            const std::uint32_t bits = std::bit_cast<std::uint32_t>(got[i++]);
            if (bits != want && ++wrong <= 5)
                ADD_FAILURE() << "half NaN " << hex(sign | 0x7C00u | m) << " -> float " << hex(want)
                              << " (payload kept, quiet bit set), you returned " << hex(bits);
        }
    EXPECT_EQ(wrong, 0);
}

// ---- unscale_ ------------------------------------------------------------------------------

TEST(Lab05, ContractUnscaleFindsEverySpecialValueAnywhere) {
    Rng rng(52);
    const std::vector<float> specials{std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                                      std::numeric_limits<float>::quiet_NaN(),
                                      std::bit_cast<float>(0xFF812345u), std::bit_cast<float>(0x7FBFFFFFu)};
    for (int trial = 0; trial < 200; ++trial) {
        amp::LossScalerOptions o;
        o.init_scale = std::ldexp(1.0, static_cast<int>(labs::pick(rng, -12, 24)));
        const amp::DynamicLossScaler scaler(o);
        const auto tensors = static_cast<std::size_t>(labs::pick(rng, 1, 5));
        std::vector<Tensor> grads;
        std::vector<std::vector<float>> before;
        const bool plant = trial % 3 != 0;
        const std::size_t where = rng.below(tensors);
        for (std::size_t t = 0; t < tensors; ++t) {
            if (t != where && rng.below(4) == 0) {  // a parameter without a gradient
                grads.emplace_back();
                before.emplace_back();
                continue;
            }
            std::vector<float> v(static_cast<std::size_t>(labs::pick(rng, 1, 40)));
            for (auto& x : v) x = static_cast<float>(rng.uniform(-1000, 1000));
            if (plant && t == where) v[rng.below(v.size())] = specials[rng.below(specials.size())];
            before.push_back(v);
            grads.push_back(from_vector<float>(v, {static_cast<std::int64_t>(v.size())}));
        }
        // A huge gradient at a scale below 1 overflows only once unscaled.
        const bool overflows_when_unscaled = !plant && o.init_scale < 1 && trial % 2 == 0;
        if (overflows_when_unscaled) {
            before[where].assign(before[where].size(), 3e38f);
            grads[where] = from_vector<float>(before[where], {static_cast<std::int64_t>(before[where].size())});
        }
        auto run = [&]() -> std::vector<float> {
            std::vector<float> out{scaler.unscale_(grads) ? 1.0f : 0.0f};
            for (const Tensor& g : grads)
                if (g.defined())
                    for (float x : g.to_vector<float>()) out.push_back(x);
            return out;
        };
        const std::vector<float> got = graded::student<std::vector<float>>("unscale_", run);
        const std::string what = std::to_string(tensors) + " gradient tensors at scale " + std::to_string(o.init_scale);
        EXPECT_EQ(got[0], plant || overflows_when_unscaled ? 1.0f : 0.0f)
            << what << (plant ? ": tensor " + std::to_string(where) + " holds an inf or NaN: report it" : "")
            << (overflows_when_unscaled ? ": a gradient overflows once multiplied by 1/scale > 1: report it" : "");
        if (plant || overflows_when_unscaled) continue;
        const float inv = static_cast<float>(1.0 / o.init_scale);
        std::size_t i = 1;
        for (const auto& v : before)
            for (float x : v) ASSERT_EQ(got[i++], x * inv) << what << ": every element times 1/scale";
    }
}

// ---- the loss scale ------------------------------------------------------------------------

TEST(Lab05, ContractLossScalerStateAfterEveryStep) {
    Rng rng(53);
    for (int script = 0; script < 100; ++script) {
        amp::LossScalerOptions o;
        o.init_scale = std::ldexp(1.0, static_cast<int>(labs::pick(rng, 0, 20)));
        o.growth_interval = labs::pick(rng, 1, 5);
        o.growth_factor = std::array{2.0, 4.0, 1.5}[rng.below(3)];
        o.backoff_factor = std::array{0.5, 0.25}[rng.below(2)];
        amp::DynamicLossScaler scaler(o);
        amp::LossScalerState want{o.init_scale, 0, 0};
        for (int step = 0; step < 30; ++step) {
            const bool overflow = rng.below(4) == 0;
            auto run = [&]() -> std::vector<double> {
                scaler.update(overflow);
                const amp::LossScalerState s = scaler.state();
                return {s.scale, static_cast<double>(s.growth_tracker), static_cast<double>(s.skipped_steps)};
            };
            const std::vector<double> got = graded::student<std::vector<double>>("update, then state", run);
            if (overflow) {
                want.scale *= o.backoff_factor;
                want.growth_tracker = 0;
                ++want.skipped_steps;
            } else if (++want.growth_tracker == o.growth_interval) {
                want.scale *= o.growth_factor;
                want.growth_tracker = 0;
            }
            const std::string where = "script " + std::to_string(script) + ", step " + std::to_string(step + 1) +
                                      (overflow ? " (overflow)" : " (finite)") + ", growth_interval " +
                                      std::to_string(o.growth_interval);
            ASSERT_EQ(got[0], want.scale) << where << ": scale";
            ASSERT_EQ(got[1], static_cast<double>(want.growth_tracker)) << where << ": good steps in a row";
            ASSERT_EQ(got[2], static_cast<double>(want.skipped_steps)) << where << ": skipped steps";
        }
    }
}

// ---- the master-weight update ------------------------------------------------------------

TEST(Lab05, ContractMasterWeightsWhenGradientsComeAndGo) {
    // Two parameters; on some steps one of them gets no gradient (it was not used). A
    // parameter without a gradient must not move on that step, whoever cleared it.
    for (DType dtype : {DType::Float16, DType::BFloat16}) {
        Tensor w0 = from_vector<float>({1.0f, -2.0f}, {2}).set_requires_grad();
        Tensor w1 = from_vector<float>({0.5f, 4.0f, -1.0f}, {3}).set_requires_grad();
        amp::MasterWeights mw({w0, w1}, dtype);
        optim::SGD sgd(mw.masters(), 0.25);
        amp::LossScalerOptions o;
        o.init_scale = 8;
        const amp::DynamicLossScaler scaler(o);
        std::vector<float> m0{1.0f, -2.0f}, m1{0.5f, 4.0f, -1.0f};
        const std::vector<std::pair<bool, bool>> has_grad{{true, true}, {true, false}, {false, true}, {true, false}, {true, true}};
        for (std::size_t step = 0; step < has_grad.size(); ++step) {
            // The model clears its own (working) gradients, as a training loop that calls
            // the model's zero_grad does; step() alone must keep each master in line.
            w0.set_grad(Tensor());
            w1.set_grad(Tensor());
            if (has_grad[step].first) w0.set_grad(to_dtype(from_vector<float>({8.0f, -8.0f}, {2}), dtype));
            if (has_grad[step].second) w1.set_grad(to_dtype(from_vector<float>({16.0f, 8.0f, -8.0f}, {3}), dtype));
            auto run = [&]() -> std::vector<float> {
                std::vector<float> out{mw.step(sgd, scaler) ? 1.0f : 0.0f};
                for (const Tensor& m : mw.masters())
                    for (float x : m.to_vector<float>()) out.push_back(x);
                return out;
            };
            const std::vector<float> got = graded::student<std::vector<float>>("MasterWeights::step", run);
            if (has_grad[step].first) m0 = {m0[0] - 0.25f * 1.0f, m0[1] + 0.25f * 1.0f};
            if (has_grad[step].second) m1 = {m1[0] - 0.25f * 2.0f, m1[1] - 0.25f * 1.0f, m1[2] + 0.25f * 1.0f};
            const std::vector<float> want{1.0f, m0[0], m0[1], m1[0], m1[1], m1[2]};
            ASSERT_EQ(got, want) << name_of(dtype) << ", step " << step + 1 << " (w0 "
                                 << (has_grad[step].first ? "has" : "has no") << " gradient, w1 "
                                 << (has_grad[step].second ? "has" : "has no")
                                 << "): a parameter without a gradient keeps its master; the others move by lr x grad / scale";
        }
    }
}

}  // namespace
}  // namespace gl
