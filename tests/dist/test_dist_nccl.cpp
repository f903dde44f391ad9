// The NCCL backend on GPUs: the same all-reduce algorithms over ncclSend/ncclRecv, and
// ncclAllReduce as the peer, on device buffers; one rank per GPU of this machine (threads
// of one process, ncclCommInitAll). Skips without a GPU; with one GPU only the one-rank
// group runs (NCCL puts at most one rank on a GPU). Run by tools/gpu/run_gpu_checks.sh.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <thread>

#include "dist/collectives.hpp"
#include "dist/nccl_comm.hpp"

namespace gl::dist {
namespace {

int gpus() {
    int n = 0;
    return cudaGetDeviceCount(&n) == cudaSuccess ? n : 0;
}

// Every algorithm on every rank's device buffer; the result copied back must be the sum.
void check_ranks(int n) {
    auto comms = NcclCommunicator::for_local_devices(n);
    std::vector<std::thread> threads;
    std::vector<std::string> errors(static_cast<std::size_t>(n));
    for (int r = 0; r < n; ++r)
        threads.emplace_back([&, r] {
            NcclCommunicator& c = *comms[static_cast<std::size_t>(r)];
            cudaSetDevice(c.device());
            c.set_timeout_s(30);
            for (auto algo : {AllReduceAlgo::ReduceBroadcast, AllReduceAlgo::RecursiveDoubling, AllReduceAlgo::Ring,
                              AllReduceAlgo::Library})
                for (std::size_t count : {std::size_t{1}, std::size_t{1001}, std::size_t{1} << 20}) {
                    std::vector<float> host(count);
                    for (std::size_t i = 0; i < count; ++i) host[i] = static_cast<float>((r + 1) * (i % 7 + 1));
                    auto dev = c.allocate(count * sizeof(float));
                    cudaMemcpy(dev.get(), host.data(), count * sizeof(float), cudaMemcpyHostToDevice);
                    all_reduce(c, dev.get(), count, DType::Float32, algo);
                    cudaMemcpy(host.data(), dev.get(), count * sizeof(float), cudaMemcpyDeviceToHost);
                    for (std::size_t i = 0; i < count; ++i)
                        if (host[i] != static_cast<float>(n * (n + 1) / 2 * (i % 7 + 1))) {
                            errors[static_cast<std::size_t>(r)] = to_string(algo) + ": wrong sum at " + std::to_string(i);
                            return;
                        }
                }
        });
    for (auto& t : threads) t.join();
    for (int r = 0; r < n; ++r) EXPECT_EQ(errors[static_cast<std::size_t>(r)], "") << "rank " << r << " of " << n;
}

// A group of one on one GPU: every algorithm must leave the buffer as it was (the sum
// over one rank), through the same NCCL calls a larger group makes.
TEST(Nccl, OneRankEveryAlgorithmLeavesItsBuffer) {
    if (!nccl_available()) GTEST_SKIP() << "this build has no NCCL backend";
    if (gpus() == 0) GTEST_SKIP() << "needs a CUDA device (cudaGetDeviceCount finds none)";
    check_ranks(1);
}

TEST(Nccl, OneRankPerGpuEveryAlgorithmSumsLikeNcclAllReduce) {
    if (!nccl_available()) GTEST_SKIP() << "this build has no NCCL backend";
    const int n = gpus();
    if (n < 2) GTEST_SKIP() << "needs two or more GPUs (cudaGetDeviceCount finds " << n << ")";
    check_ranks(n);
}

}  // namespace
}  // namespace gl::dist
