/// @file
/// @brief Observers for calibration (claim Q-1): they watch the values that flow through
/// a tensor on some calibration batches and choose the real range that quantization
/// (numerics/quantize.hpp) maps onto the 8-bit integers.
///
/// Owns: the four ways to choose a range from data: min/max, a moving average of each
/// batch's min/max, percentiles (ignore the rarest outliers), and the clipping range that
/// minimises the quantization error (MSE). Per tensor (one range) or per channel (one
/// range per row of [channels, per_channel] data, the output channels of a Linear
/// weight). Knows nothing about tensors or models.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "numerics/quantize.hpp"

namespace gl::quant {

/// A real range [lo, hi].
using Range = std::pair<float, float>;

/// Watches data and chooses ranges: one per channel (channels() of them; 1 = per tensor).
class Observer {
public:
    /// An observer of @p channels channels (>= 1).
    explicit Observer(std::int64_t channels);
    virtual ~Observer() = default;
    /// Records @p n values laid out as [channels, n / channels] (rows are channels); n
    /// must be a multiple of channels(). Throws gl::Error for NaN values.
    virtual void observe(const float* x, std::int64_t n) = 0;
    /// The range chosen for each channel from what was observed; throws gl::Error before
    /// anything was observed. @p range and @p scheme matter only to the MSE observer.
    virtual std::vector<Range> ranges(QRange range, QScheme scheme) const = 0;
    /// choose_qparams over ranges(), one per channel.
    std::vector<QParams> qparams(QRange range, QScheme scheme) const;
    /// Number of channels (1 for a per-tensor observer).
    std::int64_t channels() const { return channels_; }
    /// "minmax", "moving_average", "percentile" or "mse".
    virtual std::string name() const = 0;

protected:
    /// Values per channel in @p n values; throws unless n is a whole number of rows.
    std::int64_t per_channel(std::int64_t n) const;
    /// Throws gl::Error when nothing has been observed yet.
    void require_observed(bool observed) const;

private:
    std::int64_t channels_;
};

/// The smallest and largest value seen in each channel: the whole range, outliers included.
class MinMaxObserver final : public Observer {
public:
    using Observer::Observer;
    void observe(const float* x, std::int64_t n) override;
    std::vector<Range> ranges(QRange range, QScheme scheme) const override;
    std::string name() const override { return "minmax"; }

private:
    std::vector<float> min_, max_;
};

/// An exponential moving average of each batch's min and max (PyTorch's
/// MovingAverageMinMaxObserver): min += momentum * (batch min - min); one unusual batch
/// moves the range a little, not all the way. What QAT uses for activations.
class MovingAverageObserver final : public Observer {
public:
    /// @param channels channels; @param momentum weight of the newest batch, in (0, 1].
    explicit MovingAverageObserver(std::int64_t channels, float momentum = 0.01f);
    void observe(const float* x, std::int64_t n) override;
    std::vector<Range> ranges(QRange range, QScheme scheme) const override;
    std::string name() const override { return "moving_average"; }

private:
    float momentum_;
    std::vector<float> min_, max_;
};

/// Keeps a sample of each channel's values (all of them up to 2^20 per channel, then
/// every 2nd, 4th, ...), for the observers that need the distribution, not just its ends.
class SamplingObserver : public Observer {
public:
    using Observer::Observer;
    void observe(const float* x, std::int64_t n) override;

protected:
    /// The kept values of channel @p c.
    const std::vector<float>& samples(std::int64_t c) const { return samples_.at(static_cast<std::size_t>(c)); }
    /// True once anything was observed.
    bool observed() const { return !samples_.empty(); }

private:
    std::vector<std::vector<float>> samples_;
    std::int64_t stride_ = 1;  // keep every stride_-th value
    std::int64_t seen_ = 0;    // values seen per channel
};

/// The range between the (100 - p)-th and the p-th percentile of each channel: the rarest
/// values (one in ten thousand for p = 99.99) are clipped so the common ones get finer steps.
class PercentileObserver final : public SamplingObserver {
public:
    /// @param channels channels; @param percentile p, in (50, 100].
    explicit PercentileObserver(std::int64_t channels, double percentile = 99.99);
    std::vector<Range> ranges(QRange range, QScheme scheme) const override;
    std::string name() const override { return "percentile"; }

private:
    double percentile_;
};

/// Tries clipping ranges from the full min/max down to a thousandth of it (fractions
/// 2^(-i/8)) and keeps the one
/// whose quantize-dequantize round trip has the smallest mean squared error on the
/// samples: clipping error against rounding error, weighed on the data itself.
class MseObserver final : public SamplingObserver {
public:
    using SamplingObserver::SamplingObserver;
    std::vector<Range> ranges(QRange range, QScheme scheme) const override;
    std::string name() const override { return "mse"; }
};

/// The mean squared error of quantizing and dequantizing @p values with @p p.
double quantization_mse(const std::vector<float>& values, QParams p, QRange range);

/// An observer by name ("minmax", "moving_average", "percentile", "mse"); throws
/// gl::Error listing the names otherwise.
std::unique_ptr<Observer> make_observer(const std::string& name, std::int64_t channels);

}  // namespace gl::quant
