// Lab 06 contract tests: the prefetcher's edge cases (one batch, capacity 1 with many
// workers, failures at the first and the last batch, stop before the loop asks, stop
// twice, an empty epoch) and the crop's (1-pixel boxes and outputs, boxes at every edge,
// the ratio fallback). The student's code runs only inside graded::student, and there
// only inside run_within, so a deadlock is a recorded failure, not a hung grader.
#include <gtest/gtest.h>

#include "../unit/data_fixtures.hpp"
#include "data/prefetcher.hpp"
#include "data/transforms.hpp"
#include "graded.hpp"

namespace gl {
namespace {

using namespace std::chrono_literals;
using test::run_within;

/// A batch whose only input is its number b; batch `fail` throws "broken batch b".
MakeBatch numbered(std::size_t fail = static_cast<std::size_t>(-1)) {
    return [fail](std::size_t b) {
        if (b == fail) throw Error("broken batch " + std::to_string(b));
        return Batch{from_vector<float>({static_cast<float>(b)}, {1}), from_vector<std::int32_t>({0}, {1})};
    };
}

/// What a Prefetcher run shows: the batch numbers handed out, then the error (or "").
using Drained = std::pair<std::vector<std::int64_t>, std::string>;

Drained drain(std::size_t batches, PrefetchOptions options, MakeBatch make, std::size_t take = static_cast<std::size_t>(-1)) {
    options.timeout = 5000ms;
    const auto got = run_within<Drained>(20s, [=] {
        Prefetcher p(make, batches, options);
        Drained run;
        try {
            for (std::size_t i = 0; i < std::min(batches, take); ++i)
                run.first.push_back(static_cast<std::int64_t>(p.next().inputs.at({0})));
        } catch (const Error& e) {
            run.second = e.what();
        }
        p.stop();
        p.stop();  // idempotent
        if (p.abandoned_workers() != 0) run.second += " [workers still running after stop]";
        return run;
    });
    return got.value_or(Drained{{}, "(deadlock)"});
}

std::vector<std::int64_t> upto(std::int64_t n) {
    std::vector<std::int64_t> v(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i) v[static_cast<std::size_t>(i)] = i;
    return v;
}

TEST(Lab06, ContractPrefetcherEdgeCases) {
    const auto runs = graded::student<std::vector<Drained>>("edge cases", [] {
        return std::vector<Drained>{
            drain(1, {.num_workers = 4, .capacity = 1}, numbered()),
            drain(25, {.num_workers = 5, .capacity = 1}, numbered()),
            drain(25, {.num_workers = 2, .capacity = 50}, numbered()),
            drain(10, {.num_workers = 3, .capacity = 2}, numbered(0)),
            drain(10, {.num_workers = 3, .capacity = 2}, numbered(9)),
            drain(30, {.num_workers = 3, .capacity = 3}, numbered(), 0),  // stop before the loop asks
            drain(0, {.num_workers = 2, .capacity = 2}, numbered()),      // an empty epoch
        };
    });
    ASSERT_EQ(runs.size(), 7u);
    EXPECT_EQ(runs[0], (Drained{{0}, ""})) << "one batch, 4 workers, capacity 1";
    EXPECT_EQ(runs[1], (Drained{upto(25), ""})) << "capacity 1 with 5 workers: one batch ahead at a time";
    EXPECT_EQ(runs[2], (Drained{upto(25), ""})) << "a capacity larger than the epoch";
    EXPECT_EQ(runs[3].first, std::vector<std::int64_t>{}) << "batch 0 fails: nothing before it";
    EXPECT_NE(runs[3].second.find("batch 0: broken batch 0"), std::string::npos) << runs[3].second;
    EXPECT_EQ(runs[4].first, upto(9)) << "the last batch fails: batches 0..8 first";
    EXPECT_NE(runs[4].second.find("batch 9: broken batch 9"), std::string::npos) << runs[4].second;
    EXPECT_EQ(runs[5], (Drained{{}, ""})) << "stop() before any next(): every worker must exit";
    EXPECT_EQ(runs[6], (Drained{{}, ""})) << "an epoch of 0 batches: the workers exit at once";
}

TEST(Lab06, ContractCropEdgeCases) {
    Tensor image = empty({2, 6, 9});
    for (std::int64_t i = 0; i < image.numel(); ++i) image.data<float>()[i] = static_cast<float>(i);
    const auto r = graded::student<std::vector<std::vector<float>>>("crop edges", [image] {
        return std::vector<std::vector<float>>{
            resized_crop(image, {5, 8, 1, 1}, 3, 2).to_vector<float>(),   // 1-pixel box at the corner
            resized_crop(image, {0, 0, 6, 9}, 1, 1).to_vector<float>(),   // 1-pixel output
            resized_crop(image, {0, 7, 6, 2}, 6, 2).to_vector<float>(),   // the right edge, same size
        };
    });
    ASSERT_EQ(r.size(), 3u);
    EXPECT_EQ(r[0], (std::vector<float>{53, 53, 53, 53, 53, 53, 107, 107, 107, 107, 107, 107}))
        << "a 1 x 1 box resized to 3 x 2 repeats its pixel (channel 0: row 5, column 8 = 53)";
    ASSERT_EQ(r[1].size(), 2u);
    // One output pixel samples the centre: row 2.5, column 4 -> the mean of rows 2 and 3.
    EXPECT_NEAR(r[1][0], (2 * 9 + 4 + 3 * 9 + 4) / 2.0, 1e-4) << "a 1 x 1 output samples the box's centre";
    std::vector<float> edge;
    for (int c = 0; c < 2; ++c)
        for (int y = 0; y < 6; ++y)
            for (int x = 7; x < 9; ++x) edge.push_back(static_cast<float>(c * 54 + y * 9 + x));
    EXPECT_EQ(r[2], edge) << "a box at the right edge resized to its own size is a plain crop";

    const auto boxes = graded::student<std::vector<std::array<std::int64_t, 4>>>("fallback", [] {
        Rng rng(1);
        std::vector<std::array<std::int64_t, 4>> out;
        for (auto [h, w] : {std::pair{10, 31}, std::pair{31, 10}}) {
            const CropBox b = RandomResizedCrop(4, 4, 1.0f, 1.0f, 1.0f, 1.0f).sample_box(h, w, rng);
            out.push_back({b.top, b.left, b.height, b.width});
        }
        return out;
    });
    ASSERT_EQ(boxes.size(), 2u);
    EXPECT_EQ(boxes[0], (std::array<std::int64_t, 4>{0, 10, 10, 10})) << "a wide image falls back to the centred square";
    EXPECT_EQ(boxes[1], (std::array<std::int64_t, 4>{10, 0, 10, 10})) << "a tall image falls back to the centred square";
}

}  // namespace
}  // namespace gl
