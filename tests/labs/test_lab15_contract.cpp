// Lab 15 contract tests: the pipeline on every shape that is easy to get wrong (fewer
// elements than a chunk, a chunk of one element, more buffers than chunks, empty input),
// its input left untouched; the staged upload with one batch and with odd sizes. The
// student's code is called only through graded::student (graded.hpp).
#include <gtest/gtest.h>

#include <vector>

#include "graded.hpp"
#include "lab15_common.hpp"

namespace gl::lab15 {
namespace {

TEST(Lab15, ContractPipelineOnEveryShape) {
    struct Shape {
        std::size_t n, chunk;
        int streams, buffers;
    };
    const Shape shapes[] = {{100, 4096, 3, 2}, {7, 1, 3, 2}, {1000, 300, 2, 8}, {4096, 4096, 3, 3},
                            {4097, 4096, 1, 1}, {3 * 777 + 1, 777, 3, 1}, {0, 64, 3, 2}};
    for (const Shape& s : shapes) {
        const std::vector<float> in = inputs(s.n, s.n + 11);
        const kernels::PipelineConfig config{s.chunk, s.streams, s.buffers, 3};
        const std::vector<float> got = graded::student<std::vector<float>>(
            "shape", [&] { return run_pipelined(in, config, {}); });
        EXPECT_TRUE(bit_equal(got, synchronous(in, config)))
            << "n " << s.n << ", chunk " << s.chunk << ", streams " << s.streams << ", buffers "
            << s.buffers << ": " << first_difference(got, synchronous(in, config));
    }
}

TEST(Lab15, ContractPipelineLeavesItsInputAlone) {
    const std::vector<float> in = inputs(5000, 21);
    const kernels::PipelineConfig config{1000, 3, 2, 3};
    const std::vector<float> after = graded::student<std::vector<float>>("input", [&] {
        gl::cuda::PinnedBuffer<float> pinned_in(in.size()), pinned_out(in.size());
        std::copy(in.begin(), in.end(), pinned_in.data());
        kernels::process_pipelined(pinned_in.data(), pinned_out.data(), in.size(), config);
        return std::vector<float>(pinned_in.data(), pinned_in.data() + in.size());
    });
    EXPECT_TRUE(bit_equal(after, in)) << "process_pipelined changed its input: " << first_difference(after, in);
}

TEST(Lab15, ContractStagedUploadOnOddSizes) {
    struct Shape {
        std::size_t batches, batch;
    };
    for (const Shape s : {Shape{1, 5}, Shape{2, 1}, Shape{3, 1023}, Shape{5, 4097}}) {
        const std::vector<float> host = inputs(s.batches * s.batch, s.batch);
        const std::vector<float> got = graded::student<std::vector<float>>(
            "odd upload", [&] { return run_upload(host, s.batches, s.batch, {true, s.batch, 300}).device; });
        EXPECT_TRUE(bit_equal(got, host)) << s.batches << " batches of " << s.batch << ": "
                                          << first_difference(got, host);
    }
}

}  // namespace
}  // namespace gl::lab15
