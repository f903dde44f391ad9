// Lab 15 graded tests: the chunked copy-then-compute pipeline on streams and the pinned
// staging of batches, on the CPU runtime. Points per test are in labs/15-streams/rubric.json.
// Nothing here is timed: results are compared bit for bit with the synchronous version,
// races are provoked with the runtime's randomized stream schedule, and overlap is read
// from the runtime's timeline: which operations the program's streams and events allowed
// to run at the same time (its vector clocks), not how the machine happened to schedule them.
//
// The student's code is called only inside graded::student (graded.hpp); the timeline is
// what the runtime recorded inside the student's process.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <set>
#include <utility>
#include <vector>

#include "cuda_cpu/streams.hpp"
#include "cuda_cpu/timeline.hpp"
#include "graded.hpp"
#include "kernels/cuda/chunked_pipeline.hpp"
#include "lab15_common.hpp"

namespace gl::lab15 {
namespace {

// ---- the pipeline: results ---------------------------------------------------------------

TEST(Lab15, PipelineEqualsTheSynchronousVersion) {
    const std::size_t n = 5 * 4096 + 123;  // a short last chunk
    const std::vector<float> in = inputs(n, 1);
    for (const int streams : {1, 2, 3})
        for (const int buffers : {1, 2, 3}) {
            kernels::PipelineConfig config{4096, streams, buffers, 8};
            const std::vector<float> got = graded::student<std::vector<float>>(
                "pipelined", [&] { return run_pipelined(in, config, {}); });
            EXPECT_TRUE(bit_equal(got, synchronous(in, config)))
                << "streams " << streams << ", buffers " << buffers
                << ": the pipelined result differs from process_synchronous's; "
                << first_difference(got, synchronous(in, config));
        }
}

TEST(Lab15, PipelineHasNoRaceUnderRandomizedSchedules) {
    // Short kernels and delays up to 1 ms before every stream operation: a missing wait
    // lets a copy or a kernel run before what it depends on, and fresh device memory reads
    // as NaN, so the result differs.
    const std::size_t n = 8 * 2048;
    const std::vector<float> in = inputs(n, 2);
    // (3 streams, 1 buffer pair): a kernel that does not wait for the previous chunk's
    // copy out overwrites the only output buffer under it.
    const std::pair<int, int> layouts[] = {{2, 2}, {3, 2}, {3, 1}};  // (streams, buffers)
    for (const auto& [streams, buffers] : layouts)
        for (std::uint64_t seed = 1; seed <= 4; ++seed) {
            kernels::PipelineConfig config{2048, streams, buffers, 2};
            const std::vector<float> got = graded::student<std::vector<float>>(
                "pipelined randomized",
                [&] { return run_pipelined(in, config, {true, seed, 1000}); });
            EXPECT_TRUE(bit_equal(got, synchronous(in, config)))
                << streams << " streams, " << buffers << " buffer pair(s), randomized schedule seed " << seed
                << ": the result differs from the synchronous version, so some chunk's copy "
                   "or kernel ran before what it needs (a missing Stream::wait, or an event "
                   "recorded on the wrong stream); "
                << first_difference(got, synchronous(in, config));
        }
}

// ---- the pipeline: overlap ---------------------------------------------------------------

// Chunk c + 1's copy in must be free to run while chunk c's kernel runs: neither waits for
// the other in the order the program imposed (streams and events: the timeline's vector
// clocks), which does not depend on how busy the machine is. The timeline must show one
// copy in and one kernel per chunk, and copies from pinned memory.
void expect_copies_may_overlap_kernels(const std::vector<Entry>& timeline, std::size_t chunks, int streams) {
    const std::vector<Entry> copies = copies_in_by_chunk(timeline, chunks);
    const std::vector<Entry> kernels = kernels_in_order(timeline);
    ASSERT_EQ(copies.size(), chunks) << "the timeline should show one copy in per chunk";
    ASSERT_EQ(kernels.size(), chunks) << "the timeline should show one kernel per chunk";
    for (const Entry& c : copies)
        EXPECT_FALSE(pageable(c)) << "a copy in came from pageable memory; copy from the pinned input";
    for (std::size_t c = 0; c + 1 < chunks; ++c)
        EXPECT_TRUE(may_overlap(copies[c + 1], kernels[c]))
            << "with " << streams << " streams, the copy in of chunk " << c + 1
            << " cannot run while the kernel of chunk " << c
            << " runs: one waits for the other (the same stream, or a Stream::wait on an event "
               "recorded after it). The copy of chunk c + 1 should wait only for the kernel that "
               "last read its buffer (chunk c + 1 - buffers)";
}

// Runs the student's pipeline on @p streams streams with the timeline on, and checks it.
void expect_overlap_on(int streams, std::uint64_t seed) {
    const std::size_t chunks = 8, chunk = 4096;
    const std::vector<float> in = inputs(chunks * chunk, seed);
    const kernels::PipelineConfig config{chunk, streams, 2, 16};
    const std::vector<Entry> timeline = graded::student<std::vector<Entry>>(
        "timeline", [&] { return run_pipelined_timeline(in, config); });
    expect_copies_may_overlap_kernels(timeline, chunks, streams);
}

TEST(Lab15, NextChunksCopyOverlapsThisChunksKernelOnThreeStreams) { expect_overlap_on(3, 3); }

TEST(Lab15, NextChunksCopyOverlapsThisChunksKernelOnTwoStreams) { expect_overlap_on(2, 4); }

// ---- pinned staging ------------------------------------------------------------------------

TEST(Lab15, StagedUploadDeliversEveryBatch) {
    const std::size_t batches = 9, batch = 3000;
    const std::vector<float> host = inputs(batches * batch, 5);
    const std::vector<float> got = graded::student<std::vector<float>>(
        "upload", [&] { return run_upload(host, batches, batch, {}).device; });
    EXPECT_TRUE(bit_equal(got, host)) << first_difference(got, host);
}

TEST(Lab15, StagedUploadHasNoRaceUnderRandomizedSchedules) {
    const std::size_t batches = 8, batch = 2048;
    const std::vector<float> host = inputs(batches * batch, 6);
    for (std::uint64_t seed = 1; seed <= 4; ++seed) {
        const std::vector<float> got = graded::student<std::vector<float>>(
            "upload randomized", [&] { return run_upload(host, batches, batch, {true, seed, 1000}).device; });
        EXPECT_TRUE(bit_equal(got, host))
            << "randomized schedule seed " << seed
            << ": a batch on the device is not the batch sent, so the host refilled a staging "
               "buffer before the stream had copied it out (wait for its event), or returned "
               "before the last copy; "
            << first_difference(got, host);
    }
}

TEST(Lab15, StagedUploadCopiesFromTwoPinnedBuffers) {
    const std::size_t batches = 6, batch = 1000;
    const std::vector<float> host = inputs(batches * batch, 7);
    const Upload got = graded::student<Upload>(
        "upload timeline", [&] { return run_upload(host, batches, batch, {}); });
    std::size_t copies = 0;
    std::set<double> sources;
    for (const Entry& e : got.timeline) {
        if (kind(e) != gl::cuda::cpu::OpKind::copy_h2d) continue;
        ++copies;
        EXPECT_FALSE(pageable(e)) << "a batch was copied to the device from pageable memory: "
                                     "copy from the pinned staging buffers";
        EXPECT_EQ(e[kStream], got.stream) << "every copy goes on the stream given";
        sources.insert(e[kChunk]);
    }
    EXPECT_EQ(copies, batches) << "one host-to-device copy per batch";
    EXPECT_EQ(sources.size(), 2u) << "the copies should alternate between the two staging buffers";
}

}  // namespace
}  // namespace gl::lab15
