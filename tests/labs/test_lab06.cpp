// Lab 06 graded tests: the prefetching loader core (core/data/prefetcher.cpp) and
// RandomResizedCrop (core/data/transforms.cpp). Points per test are in
// labs/06-data-loading/rubric.json.
//
// The student's code runs only inside graded::student (graded.hpp), and there only
// inside run_within: a deadlock becomes a recorded "did not finish" instead of a hung
// grader. Nothing is timed; the deadlines are ceilings only a deadlock reaches.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <string>

#include "../unit/data_fixtures.hpp"
#include "data/transforms.hpp"
#include "graded.hpp"

namespace gl {
namespace {

using namespace std::chrono_literals;
using test::AugmentedCounter;
using test::run_within;
using test::sample_order;

constexpr auto kDeadline = 20s;

std::string workers_text(std::size_t n) { return std::to_string(n) + (n == 1 ? " worker" : " workers"); }

// ---- Task 1: the prefetcher ---------------------------------------------------------------

TEST(Lab06, BatchesArriveInOrderEachSampleOnce) {
    for (std::size_t workers : {1u, 2u, 4u}) {
        const DataLoaderOptions options{.batch_size = 3, .shuffle = true, .seed = 7, .num_workers = workers,
                                        .timeout_ms = 10000};
        // The plan comes from the sampler (not the student's code): the order to expect.
        const auto planner = std::make_shared<AugmentedCounter>(61);
        std::vector<std::size_t> expected;
        for (const auto& batch : DataLoader(planner, options).batch_indices(1)) expected.insert(expected.end(), batch.begin(), batch.end());

        const auto order = graded::student<std::pair<bool, std::vector<std::size_t>>>("order", [&] {
            const auto got = run_within<std::vector<std::size_t>>(kDeadline, [options] {
                auto data = std::make_shared<AugmentedCounter>(61);
                data->set_delay_us(300);  // workers finish out of order
                return sample_order(DataLoader(data, options), 1);
            });
            return std::pair{got.has_value(), got.value_or(std::vector<std::size_t>{})};
        });
        ASSERT_TRUE(order.first) << "with " << workers_text(workers) << " the epoch did not finish within 20 s: a deadlock "
                                    "(a worker waiting for room that nobody frees, or next() waiting for a batch "
                                    "nobody claims)";
        EXPECT_EQ(order.second, expected) << "with " << workers_text(workers) << " the loop must see the sampler's order, "
                                             "whatever order the workers finish in (hand out batch next_to_deliver only)";
    }
}

TEST(Lab06, QueueStaysWithinTheBound) {
    // 3 workers x prefetch_factor 2: after batch 0, exactly 6 more batches (of 2 samples) are made.
    const auto counts = graded::student<std::tuple<bool, std::uint64_t, std::uint64_t>>("bound", [] {
        const auto got = run_within<std::pair<std::uint64_t, std::uint64_t>>(kDeadline, [] {
            auto data = std::make_shared<AugmentedCounter>(400);
            const DataLoader loader(data, {.batch_size = 2, .num_workers = 3, .prefetch_factor = 2, .timeout_ms = 10000});
            const EpochRange range = loader.epoch(0);
            auto it = range.begin();
            for (int i = 0; i < 500 && data->made() < 14; ++i) std::this_thread::sleep_for(10ms);
            std::this_thread::sleep_for(100ms);  // room for workers to (wrongly) run past the bound
            const std::uint64_t made = data->made();
            const std::uint64_t peak = range.peak_ahead();
            return std::pair{made, peak};
        });
        return std::tuple{got.has_value(), got ? got->first : 0, got ? got->second : 0};
    });
    ASSERT_TRUE(std::get<0>(counts)) << "the loader deadlocked";
    EXPECT_EQ(std::get<1>(counts), 14u) << "samples made while the loop holds batch 0: 2 for it and 2 x 6 for the "
                                           "batches ahead; a worker may claim a batch only while fewer than capacity "
                                           "are claimed and not handed out";
    EXPECT_EQ(std::get<2>(counts), 6u) << "peak_ahead must reach the capacity (3 workers x prefetch_factor 2)";
}

TEST(Lab06, LeavingEarlyJoinsTheWorkers) {
    const auto r = graded::student<std::tuple<bool, std::uint64_t, std::uint64_t, bool>>("early exit", [] {
        const auto broke = run_within<std::pair<std::uint64_t, std::uint64_t>>(kDeadline, [] {
            auto data = std::make_shared<AugmentedCounter>(4000);
            const DataLoader loader(data, {.batch_size = 2, .num_workers = 3, .timeout_ms = 2000});
            const EpochRange range = loader.epoch(0);
            for (const Batch& batch : range)
                if (batch.inputs.at({0, 0}) >= 4.0) break;
            range.stop();
            return std::pair<std::uint64_t, std::uint64_t>{range.abandoned_workers(), data->made()};
        });
        const auto threw = run_within<bool>(kDeadline, [] {
            auto data = std::make_shared<AugmentedCounter>(400);
            const DataLoader loader(data, {.batch_size = 2, .num_workers = 2, .timeout_ms = 2000});
            try {
                for (const Batch& batch : loader.epoch(0))
                    if (batch.inputs.at({0, 0}) >= 2.0) throw std::runtime_error("the loss is NaN");
            } catch (const std::runtime_error&) {
                return true;
            }
            return false;
        });
        return std::tuple{broke.has_value(), broke ? broke->first : 99, broke ? broke->second : 0,
                          threw.value_or(false)};
    });
    ASSERT_TRUE(std::get<0>(r)) << "breaking out of the loop deadlocked";
    EXPECT_EQ(std::get<1>(r), 0u) << "workers still running 2 s after stop: set stopping and wake the workers "
                                     "waiting for room (space_freed)";
    EXPECT_LT(std::get<2>(r), 100u) << "the workers kept making batches after the loop left";
    EXPECT_TRUE(std::get<3>(r)) << "an exception in the loop body must unwind through the range (and join the workers)";
}

TEST(Lab06, ExceptionsReachTheLoopWithTheSampleIndex) {
    for (std::size_t workers : {1u, 3u}) {
        const auto r = graded::student<std::pair<std::string, std::uint64_t>>("exception", [workers] {
            const auto got = run_within<std::pair<std::string, std::uint64_t>>(kDeadline, [workers] {
                auto data = std::make_shared<AugmentedCounter>(40, 17);
                const DataLoader loader(data, {.batch_size = 4, .num_workers = workers, .timeout_ms = 10000});
                std::uint64_t before = 0;
                try {
                    for (const Batch& batch : loader.epoch(2)) {
                        (void)batch;
                        ++before;
                    }
                } catch (const Error& e) {
                    return std::pair<std::string, std::uint64_t>{e.what(), before};
                }
                return std::pair<std::string, std::uint64_t>{"(nothing was thrown)", before};
            });
            return got.value_or(std::pair<std::string, std::uint64_t>{"(deadlock)", 0});
        });
        for (const char* part : {"epoch 2", "batch 4", "sample 17", "decoder exploded on 17"})
            EXPECT_NE(r.first.find(part), std::string::npos)
                << "with " << workers_text(workers) << " the error must contain \"" << part << "\"; it was: " << r.first
                << " (keep the worker's exception in its Result and rethrow it as gl::Error(\"batch B: \" + message))";
        EXPECT_EQ(r.second, 4u) << "batches 0..3 must reach the loop before the failing batch 4";
    }
}

TEST(Lab06, AHungWorkerIsReported) {
    const auto r = graded::student<std::string>("hung", [] {
        auto data = std::make_shared<AugmentedCounter>(20, AugmentedCounter::kNone, 0);
        const auto got = run_within<std::string>(kDeadline, [data] {
            const DataLoader loader(data, {.batch_size = 2, .num_workers = 2, .timeout_ms = 300});
            std::string message = "(nothing was thrown)";
            try {
                for (const Batch& batch : loader.epoch(0)) (void)batch;
            } catch (const Error& e) {
                message = e.what();
            }
            data->release();
            return message;
        });
        if (!got) data->release();
        return got.value_or("(the loop hung)");
    });
    EXPECT_NE(r.find("no batch 0"), std::string::npos)
        << "a worker stuck in sample 0 must be reported after timeout_ms (wait_for, then hung_worker_error); got: " << r;
}

// ---- Task 2: RandomResizedCrop --------------------------------------------------------------

/// torchvision's RandomResizedCrop.get_params, written independently of the core, drawing
/// from the same generator in the same order.
CropBox oracle_box(int in_h, int in_w, double s_lo, double s_hi, double r_lo, double r_hi, Rng& rng) {
    const double area = static_cast<double>(in_h) * in_w;
    for (int attempt = 0; attempt < 10; ++attempt) {
        const double target = area * rng.uniform(s_lo, s_hi);
        const double ratio = std::exp(rng.uniform(std::log(r_lo), std::log(r_hi)));
        const auto w = static_cast<int>(std::lround(std::sqrt(target * ratio)));
        const auto h = static_cast<int>(std::lround(std::sqrt(target / ratio)));
        if (0 < w && w <= in_w && 0 < h && h <= in_h) {
            const auto top = static_cast<int>(rng.below(static_cast<std::uint64_t>(in_h - h + 1)));
            const auto left = static_cast<int>(rng.below(static_cast<std::uint64_t>(in_w - w + 1)));
            return {top, left, h, w};
        }
    }
    const double in_ratio = static_cast<double>(in_w) / in_h;
    int w = in_w, h = in_h;
    if (in_ratio < r_lo) h = static_cast<int>(std::lround(w / r_lo));
    else if (in_ratio > r_hi) w = static_cast<int>(std::lround(h * r_hi));
    return {(in_h - h) / 2, (in_w - w) / 2, h, w};
}

using Box = std::array<std::int64_t, 4>;
Box as_array(const CropBox& b) { return {b.top, b.left, b.height, b.width}; }

struct CropCase {
    int h, w;
    float s_lo, s_hi, r_lo, r_hi;
};

const std::vector<CropCase> kCropCases = {
    {37, 51, 0.08f, 1.0f, 0.75f, 4.0f / 3.0f}, {5, 3, 0.08f, 1.0f, 0.75f, 4.0f / 3.0f}, {224, 224, 0.08f, 1.0f, 0.75f, 4.0f / 3.0f},
    {101, 7, 0.3f, 0.9f, 0.5f, 2.0f},          {1, 1, 0.08f, 1.0f, 0.75f, 4.0f / 3.0f}, {9, 40, 0.95f, 1.0f, 1.0f, 1.0f},
    {40, 9, 0.95f, 1.0f, 1.0f, 1.2f}};

TEST(Lab06, CropBoxesMatchTheReferenceSampler) {
    for (std::size_t c = 0; c < kCropCases.size(); ++c) {
        const CropCase k = kCropCases[c];
        const auto boxes = graded::student<std::vector<Box>>("boxes", [k] {
            const RandomResizedCrop crop(4, 4, k.s_lo, k.s_hi, k.r_lo, k.r_hi);
            std::vector<Box> out;
            for (std::uint64_t seed = 0; seed < 200; ++seed) {
                Rng rng(seed);
                out.push_back(as_array(crop.sample_box(k.h, k.w, rng)));
            }
            return out;
        });
        ASSERT_EQ(boxes.size(), 200u);
        for (std::uint64_t seed = 0; seed < 200; ++seed) {
            Rng rng(seed);
            const Box want = as_array(oracle_box(k.h, k.w, k.s_lo, k.s_hi, k.r_lo, k.r_hi, rng));
            ASSERT_EQ(boxes[seed], want) << "image " << k.h << " x " << k.w << ", scale [" << k.s_lo << ", " << k.s_hi
                                         << "], ratio [" << k.r_lo << ", " << k.r_hi << "], Rng(" << seed
                                         << "): box {top, left, height, width} differs from torchvision's algorithm "
                                            "(draw order: area, log-ratio, then top, then left; std::lround; the fallback)";
        }
    }
}

/// Bilinear resize of @p box in double precision, align_corners = false.
std::vector<double> oracle_resize(const Tensor& image, const CropBox& box, int out_h, int out_w) {
    const auto C = image.size(0), W = image.size(2);
    const auto src = image.to_vector<float>();
    const auto coord = [](int d, int out, int in) {
        const double s = std::max((d + 0.5) * in / out - 0.5, 0.0);
        const int lo = std::min(static_cast<int>(s), in - 1);
        return std::tuple{lo, std::min(lo + 1, in - 1), s - lo};
    };
    std::vector<double> out;
    for (std::int64_t c = 0; c < C; ++c)
        for (int y = 0; y < out_h; ++y)
            for (int x = 0; x < out_w; ++x) {
                const auto [y0, y1, fy] = coord(y, out_h, box.height);
                const auto [x0, x1, fx] = coord(x, out_w, box.width);
                const auto at = [&](int r, int q) {
                    return static_cast<double>(src[(c * image.size(1) + box.top + r) * W + box.left + q]);
                };
                out.push_back((at(y0, x0) * (1 - fx) + at(y0, x1) * fx) * (1 - fy) +
                              (at(y1, x0) * (1 - fx) + at(y1, x1) * fx) * fy);
            }
    return out;
}

Tensor random_image(int c, int h, int w, std::uint64_t seed) {
    Rng rng(seed);
    Tensor t = empty({c, h, w});
    for (std::int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = static_cast<float>(rng.uniform());
    return t;
}

void expect_resize_matches(const Tensor& image, const CropBox& box, int oh, int ow) {
    const auto got = graded::student<std::vector<float>>("resize", [&] { return resized_crop(image, box, oh, ow).to_vector<float>(); });
    const auto want = oracle_resize(image, box, oh, ow);
    ASSERT_EQ(got.size(), want.size()) << "the output must be [C, " << oh << ", " << ow << "]";
    for (std::size_t i = 0; i < want.size(); ++i)
        ASSERT_NEAR(got[i], want[i], 1e-5) << "box {" << box.top << ", " << box.left << ", " << box.height << ", "
                                           << box.width << "} to " << oh << " x " << ow << ", element " << i
                                           << ": sample at (d + 0.5) * in / out - 0.5, clamped at 0, and blend";
}

TEST(Lab06, ResizedCropMatchesTheBilinearOracle) {
    const Tensor image = random_image(3, 13, 17, 5);
    expect_resize_matches(image, {0, 0, 13, 17}, 7, 9);    // shrink, odd
    expect_resize_matches(image, {2, 3, 9, 11}, 21, 23);   // enlarge, odd, offset box
    expect_resize_matches(image, {1, 0, 11, 17}, 11, 5);   // mixed
    expect_resize_matches(image, {0, 0, 13, 17}, 13, 17);  // same size: the identity
}

}  // namespace
}  // namespace gl
