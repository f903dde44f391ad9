// Observers: choosing the real range that 8-bit quantization covers, from data.
#include "numerics/observer.hpp"

#include <algorithm>
#include <cmath>

#include "base/error.hpp"

namespace gl::quant {
namespace {

void reject_nan(const float* x, std::int64_t n) {
    for (std::int64_t i = 0; i < n; ++i)
        if (std::isnan(x[i]))
            throw Error("observer: NaN in the calibration data (element " + std::to_string(i) +
                        "); a NaN has no place in a range");
}

// The smallest and largest of each row of a [channels, per] block.
void row_ranges(const float* x, std::int64_t channels, std::int64_t per, std::vector<float>& lo,
                std::vector<float>& hi) {
    lo.assign(static_cast<std::size_t>(channels), 0.0f);
    hi.assign(static_cast<std::size_t>(channels), 0.0f);
    for (std::int64_t c = 0; c < channels; ++c) {
        const auto [mn, mx] = std::minmax_element(x + c * per, x + (c + 1) * per);
        lo[c] = *mn;
        hi[c] = *mx;
    }
}

// The value below which a fraction q of the sorted-on-demand values lie (nearest rank).
float quantile(std::vector<float> values, double q) {
    const auto k = static_cast<std::size_t>(std::llround(q * static_cast<double>(values.size() - 1)));
    std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(k), values.end());
    return values[k];
}

}  // namespace

Observer::Observer(std::int64_t channels) : channels_(channels) {
    check(channels >= 1, "observer: needs at least one channel, got " + std::to_string(channels));
}

std::int64_t Observer::per_channel(std::int64_t n) const {
    check(n > 0 && n % channels_ == 0, "observer: " + std::to_string(n) + " values are not a whole number of rows of " +
                                           std::to_string(channels_) + " channels");
    return n / channels_;
}

void Observer::require_observed(bool observed) const {
    check(observed, "observer '" + name() + "': nothing observed yet; run calibration batches first");
}

std::vector<QParams> Observer::qparams(QRange range, QScheme scheme) const {
    std::vector<QParams> out;
    for (const auto& [lo, hi] : ranges(range, scheme)) out.push_back(choose_qparams(lo, hi, range, scheme));
    return out;
}

void MinMaxObserver::observe(const float* x, std::int64_t n) {
    // LAB 12 BEGIN: the per-channel min/max observer
    // Row c of the [channels(), per] block is channel c (per_channel(n) checks n and gives
    // per). Refuse NaN before anything changes (reject_nan): min and max would silently
    // ignore or keep it, depending on where it is. The first batch sets each channel's
    // min_ and max_; later batches can only widen them (row_ranges gives a batch's).
    const std::int64_t per = per_channel(n);
    reject_nan(x, n);
    std::vector<float> lo, hi;
    row_ranges(x, channels(), per, lo, hi);
    if (min_.empty()) {
        min_ = lo;
        max_ = hi;
        return;
    }
    for (std::size_t c = 0; c < lo.size(); ++c) {
        min_[c] = std::min(min_[c], lo[c]);
        max_[c] = std::max(max_[c], hi[c]);
    }
    // LAB 12 END
}

std::vector<Range> MinMaxObserver::ranges(QRange, QScheme) const {
    require_observed(!min_.empty());
    std::vector<Range> out;
    for (std::size_t c = 0; c < min_.size(); ++c) out.emplace_back(min_[c], max_[c]);
    return out;
}

MovingAverageObserver::MovingAverageObserver(std::int64_t channels, float momentum)
    : Observer(channels), momentum_(momentum) {
    check(momentum > 0.0f && momentum <= 1.0f, "moving-average observer: momentum must be in (0, 1]");
}

void MovingAverageObserver::observe(const float* x, std::int64_t n) {
    const std::int64_t per = per_channel(n);
    reject_nan(x, n);
    std::vector<float> lo, hi;
    row_ranges(x, channels(), per, lo, hi);
    if (min_.empty()) {  // the first batch sets the range
        min_ = lo;
        max_ = hi;
        return;
    }
    for (std::size_t c = 0; c < lo.size(); ++c) {
        min_[c] += momentum_ * (lo[c] - min_[c]);
        max_[c] += momentum_ * (hi[c] - max_[c]);
    }
}

std::vector<Range> MovingAverageObserver::ranges(QRange, QScheme) const {
    require_observed(!min_.empty());
    std::vector<Range> out;
    for (std::size_t c = 0; c < min_.size(); ++c) out.emplace_back(min_[c], max_[c]);
    return out;
}

void SamplingObserver::observe(const float* x, std::int64_t n) {
    constexpr std::int64_t kMaxSamples = std::int64_t{1} << 20;
    const std::int64_t per = per_channel(n);
    reject_nan(x, n);
    samples_.resize(static_cast<std::size_t>(channels()));
    for (std::int64_t i = 0; i < per; ++i, ++seen_) {
        if (seen_ % stride_ != 0) continue;
        for (std::int64_t c = 0; c < channels(); ++c) samples_[c].push_back(x[c * per + i]);
    }
    if (static_cast<std::int64_t>(samples_[0].size()) > kMaxSamples) {  // keep every other one, from now on too
        for (auto& s : samples_) {
            for (std::size_t i = 0; 2 * i < s.size(); ++i) s[i] = s[2 * i];
            s.resize((s.size() + 1) / 2);
        }
        stride_ *= 2;
    }
}

PercentileObserver::PercentileObserver(std::int64_t channels, double percentile)
    : SamplingObserver(channels), percentile_(percentile) {
    check(percentile > 50.0 && percentile <= 100.0, "percentile observer: the percentile must be in (50, 100]");
}

std::vector<Range> PercentileObserver::ranges(QRange, QScheme) const {
    require_observed(observed());
    std::vector<Range> out;
    const double q = percentile_ / 100.0;
    for (std::int64_t c = 0; c < channels(); ++c)
        out.emplace_back(quantile(samples(c), 1.0 - q), quantile(samples(c), q));
    return out;
}

double quantization_mse(const std::vector<float>& values, QParams p, QRange range) {
    double sum = 0.0;
    for (const float v : values) {
        const double e = static_cast<double>(dequantize_value(quantize_value(v, p, range), p)) - v;
        sum += e * e;
    }
    return values.empty() ? 0.0 : sum / static_cast<double>(values.size());
}

std::vector<Range> MseObserver::ranges(QRange range, QScheme scheme) const {
    require_observed(observed());
    // Clip fractions 2^(-i/8): 1, 0.917, 0.841, ... down to 2^-10, so that even a range
    // blown up a thousandfold by one outlier finds the bulk of the data.
    constexpr int kCandidates = 81;
    std::vector<Range> out;
    for (std::int64_t c = 0; c < channels(); ++c) {
        const auto [mn, mx] = std::minmax_element(samples(c).begin(), samples(c).end());
        Range best{*mn, *mx};
        double best_mse = quantization_mse(samples(c), choose_qparams(*mn, *mx, range, scheme), range);
        for (int i = 1; i < kCandidates; ++i) {
            const float f = std::exp2(-static_cast<float>(i) / 8.0f);
            const Range r{*mn * f, *mx * f};
            const double mse = quantization_mse(samples(c), choose_qparams(r.first, r.second, range, scheme), range);
            if (mse < best_mse) {
                best_mse = mse;
                best = r;
            }
        }
        out.push_back(best);
    }
    return out;
}

std::unique_ptr<Observer> make_observer(const std::string& name, std::int64_t channels) {
    if (name == "minmax") return std::make_unique<MinMaxObserver>(channels);
    if (name == "moving_average") return std::make_unique<MovingAverageObserver>(channels);
    if (name == "percentile") return std::make_unique<PercentileObserver>(channels);
    if (name == "mse") return std::make_unique<MseObserver>(channels);
    throw Error("unknown observer '" + name + "'; known observers: minmax, moving_average, percentile, mse");
}

}  // namespace gl::quant
