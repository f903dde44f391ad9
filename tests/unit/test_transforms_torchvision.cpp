// Peer test of the transforms (core/data/transforms.hpp) against torchvision, given the
// same crop, flip and jitter parameters: equal within 1/255 per pixel; and torchvision's
// antialias=True, which differs when shrinking (and only then). One run of the peer script
// (importing torch takes seconds). Skips with a message when torchvision is not
// installed (Debian: python3-torchvision).
#include <gtest/gtest.h>

#include "testkit/torchvision_peer.hpp"

namespace gl::test {
namespace {

TEST(TransformsVsTorchvision, SameParametersSamePixelsAntialiasOnlyWhenShrinking) {
    const testkit::TransformPeerReport report = testkit::compare_transforms_with_torchvision(5);
    if (!report.available) GTEST_SKIP() << "torchvision peer test skipped: " << report.why_not;
    ASSERT_GE(report.rows.size(), 30u);
    for (const auto& row : report.rows) {
        if (row.should_match)
            EXPECT_LE(row.max_difference, 1.0 / 255.0) << row.what << " (torchvision " << report.version << ")";
        else
            EXPECT_GT(row.max_difference, 0.1) << row.what << ": expected to differ";
    }
}

}  // namespace
}  // namespace gl::test
