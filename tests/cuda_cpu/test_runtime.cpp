// Tests of the CUDA-on-CPU runtime (core/cuda_cpu/): barriers, shared memory, warp
// shuffles and votes, atomics, deadlock and exception reports, schedules, and the memory
// counters. The kernels are ordinary CUDA C++; this file is compiled by g++.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

#include "cuda_cpu/cuda_compat.hpp"
#include "cuda_error_of.hpp"
#include "device_vector.hpp"
#include "semantics_kernels.cuh"
#if GRADLAB_HAVE_CUDA
#include "cuda_cpu/device_status.hpp"
#endif

gl::test::SemanticsResults gl::test::semantics_on_cpu() { return run_semantics(); }

namespace {

using gl::cuda::Counted;
using gl::cuda::Direct;
using gl::cuda::ErrorCode;
using gl::cuda::global_ptr;
using gl::cuda::launch;
using gl::cuda::shared_array;
using gl::cuda::cpu::Order;
using gl::cuda::cpu::Schedule;
using gl::cuda::cpu::ScopedSchedule;
using gl::test::DeviceVector;

const Schedule kSchedules[] = {{Order::in_order, 0}, {Order::reverse, 0}, {Order::random, 1},
                               {Order::random, 2}};

std::string name_of(const Schedule& s) {
    switch (s.order) {
        case Order::in_order: return "in_order";
        case Order::reverse: return "reverse";
        case Order::random: return "random(seed " + std::to_string(s.seed) + ")";
    }
    return "?";
}

using gl::test::error_of;  // the gl::cuda::Error a call throws, its code checked

// ---------------------------------------------------------------------------------------
// Barriers and shared memory

__global__ void reverse_in_block(const int* in, int* out) {
    __shared__ int s[256];
    const int t = threadIdx.x;
    const int base = blockIdx.x * blockDim.x;
    s[t] = in[base + t];
    __syncthreads();  // every element of s is written before anyone reads
    out[base + t] = s[blockDim.x - 1 - t];
}

TEST(CudaCpuBarrier, ReverseInBlockIsRightUnderEverySchedule) {
    const int blocks = 8, threads = 256;
    std::vector<int> in(blocks * threads);
    std::iota(in.begin(), in.end(), 7);
    for (const Schedule& s : kSchedules) {
        ScopedSchedule scope(s);
        DeviceVector<int> d_in(in), d_out(in.size());
        launch(reverse_in_block, dim3(blocks), dim3(threads), 0, d_in.get(), d_out.get());
        const std::vector<int> out = d_out.to_host();
        for (int b = 0; b < blocks; ++b)
            for (int t = 0; t < threads; ++t)
                ASSERT_EQ(out[b * threads + t], in[b * threads + threads - 1 - t])
                    << "block " << b << " thread " << t << " schedule " << name_of(s);
    }
}

// Each thread reads the element its left neighbour wrote. Without the barrier this is a
// race: it happens to work when threads run in order (the neighbour has finished), and
// fails when they do not.
template <bool kWithBarrier>
__global__ void read_left_neighbour(const int* in, int* out) {
    __shared__ int s[128];
    const int t = threadIdx.x;
    s[t] = in[t];
    if (kWithBarrier) __syncthreads();
    out[t] = t > 0 ? s[t - 1] : -1;
}

template <bool kWithBarrier>
bool left_neighbour_is_right(const Schedule& s, int launch_number) {
    ScopedSchedule scope(s);
    const int n = 128;
    std::vector<int> in(n);
    // Fresh values each launch, so stale shared memory from an earlier one cannot pass.
    std::iota(in.begin(), in.end(), 1000 * launch_number);
    DeviceVector<int> d_in(in), d_out(n);
    launch(read_left_neighbour<kWithBarrier>, dim3(1), dim3(n), 0, d_in.get(), d_out.get());
    const std::vector<int> out = d_out.to_host();
    for (int t = 1; t < n; ++t)
        if (out[t] != in[t - 1]) return false;
    return true;
}

TEST(CudaCpuSchedule, MissingBarrierGivesWrongAnswersOutOfOrder) {
    int launch_number = 1;
    // In order the race stays hidden; reverse and random orders expose it.
    EXPECT_TRUE(left_neighbour_is_right<false>({Order::in_order, 0}, launch_number++));
    EXPECT_FALSE(left_neighbour_is_right<false>({Order::reverse, 0}, launch_number++));
    EXPECT_FALSE(left_neighbour_is_right<false>({Order::random, 1}, launch_number++));
    EXPECT_FALSE(left_neighbour_is_right<false>({Order::random, 2}, launch_number++));
    // With the barrier every order gives the right answer.
    for (const Schedule& s : kSchedules)
        EXPECT_TRUE(left_neighbour_is_right<true>(s, launch_number++)) << name_of(s);
}

__global__ void check_block_private_shared(int* errors) {
    __shared__ int s[128];
    const int t = threadIdx.x;
    s[t] = blockIdx.x * 1000 + t;
    __syncthreads();
    const int other = (t + 1) % blockDim.x;
    if (s[other] != static_cast<int>(blockIdx.x) * 1000 + other) atomicAdd(errors, 1);
    __syncthreads();
    s[t] = -1;  // scribble: a later block on this worker must not see values it did not write
}

TEST(CudaCpuSharedMemory, EachBlockHasItsOwn) {
    gl::cuda::cpu::set_workers(2);
    for (const Schedule& s : kSchedules) {
        ScopedSchedule scope(s);
        DeviceVector<int> errors(std::vector<int>{0});
        launch(check_block_private_shared, dim3(64), dim3(128), 0, errors.get());
        EXPECT_EQ(errors.to_host()[0], 0) << name_of(s);
    }
}

__global__ void reverse_dynamic(const float* in, float* out) {
    float* s = gl::cuda::dynamic_shared<float>();
    const int t = threadIdx.x;
    s[t] = in[blockIdx.x * blockDim.x + t];
    __syncthreads();
    out[blockIdx.x * blockDim.x + t] = s[blockDim.x - 1 - t];
}

TEST(CudaCpuSharedMemory, DynamicSharedMemory) {
    for (int threads : {32, 100, 1024}) {
        const int blocks = 3;
        std::vector<float> in(blocks * threads);
        std::iota(in.begin(), in.end(), 0.5f);
        DeviceVector<float> d_in(in), d_out(in.size());
        launch(reverse_dynamic, dim3(blocks), dim3(threads), threads * sizeof(float), d_in.get(),
               d_out.get());
        const std::vector<float> out = d_out.to_host();
        for (int b = 0; b < blocks; ++b)
            for (int t = 0; t < threads; ++t)
                ASSERT_EQ(out[b * threads + t], in[b * threads + threads - 1 - t]);
    }
    DeviceVector<float> d(1);
    error_of([&] { launch(reverse_dynamic, dim3(1), dim3(1), 48 * 1024 + 4, d.get(), d.get()); },
             ErrorCode::invalid_configuration);
}

#if !defined(NDEBUG)
__global__ void index_shared_array(int n, int* out) {
    __shared__ shared_array<Direct, int, 32> s;
    s[threadIdx.x] = n;  // out of bounds when the block has more than 32 threads
    out[0] = s[0];
}
#endif

TEST(CudaCpuSharedMemory, OutOfBoundsIndexIsCaughtInDebugBuilds) {
#if defined(NDEBUG)
    GTEST_SKIP() << "shared-array bounds are checked in debug builds (this is a release build)";
#else
    DeviceVector<int> out(1);
    const std::string msg = error_of(
        [&] { launch(index_shared_array, dim3(1), dim3(33), 0, 1, out.get()); },
        ErrorCode::kernel_exception);
    EXPECT_NE(msg.find("shared-memory index 32 is outside the array of 32"), std::string::npos)
        << msg;
    EXPECT_NE(msg.find("thread (32,0,0) of block (0,0,0)"), std::string::npos) << msg;
#endif
}

__global__ void write_indices(uint3* thread_out, uint3* block_out) {
    const unsigned block = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
    const unsigned t = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    const unsigned i = block * blockDim.x * blockDim.y * blockDim.z + t;
    thread_out[i] = threadIdx;
    block_out[i] = blockIdx;
}

TEST(CudaCpuLaunch, ThreeDimensionalIndices) {
    const dim3 grid(3, 2, 2), block(4, 3, 2);
    const int n = 12 * 24;
    DeviceVector<uint3> threads(n), blocks(n);
    launch(write_indices, grid, block, 0, threads.get(), blocks.get());
    const auto t = threads.to_host();
    const auto b = blocks.to_host();
    int i = 0;
    for (unsigned bz = 0; bz < 2; ++bz)
        for (unsigned by = 0; by < 2; ++by)
            for (unsigned bx = 0; bx < 3; ++bx)
                for (unsigned tz = 0; tz < 2; ++tz)
                    for (unsigned ty = 0; ty < 3; ++ty)
                        for (unsigned tx = 0; tx < 4; ++tx, ++i) {
                            ASSERT_EQ(t[i].x, tx);
                            ASSERT_EQ(t[i].y, ty);
                            ASSERT_EQ(t[i].z, tz);
                            ASSERT_EQ(b[i].x, bx);
                            ASSERT_EQ(b[i].y, by);
                            ASSERT_EQ(b[i].z, bz);
                        }
}

TEST(CudaCpuLaunch, BadConfigurationsAreRejected) {
    DeviceVector<uint3> d(1);
    error_of([&] { launch(write_indices, dim3(1), dim3(1025), 0, d.get(), d.get()); },
             ErrorCode::invalid_configuration);
    error_of([&] { launch(write_indices, dim3(0), dim3(32), 0, d.get(), d.get()); },
             ErrorCode::invalid_configuration);
    error_of([&] { launch(write_indices, dim3(1), dim3(32, 32, 2), 0, d.get(), d.get()); },
             ErrorCode::invalid_configuration);
}

// ---------------------------------------------------------------------------------------
// Warp shuffles and votes

__global__ void all_shuffles(int width, int arg, int* idx, int* up, int* down, int* xr) {
    const int lane = threadIdx.x;
    const int v = 100 + lane;
    idx[lane] = __shfl_sync(0xffffffffu, v, arg, width);
    up[lane] = __shfl_up_sync(0xffffffffu, v, static_cast<unsigned>(arg), width);
    down[lane] = __shfl_down_sync(0xffffffffu, v, static_cast<unsigned>(arg), width);
    xr[lane] = __shfl_xor_sync(0xffffffffu, v, arg, width);
}

TEST(CudaCpuWarp, ShufflesAtEveryWidth) {
    // The rules of the CUDA programming guide, written out plainly: lanes form segments of
    // `width`; a shuffle reads inside its segment, except that xor may read an earlier one.
    for (int width : {1, 2, 4, 8, 16, 32}) {
        for (int arg : {0, 1, 3, width / 2, width - 1, width, width + 1, 31}) {
            DeviceVector<int> idx(32), up(32), down(32), xr(32);
            launch(all_shuffles, dim3(1), dim3(32), 0, width, arg, idx.get(), up.get(), down.get(),
                   xr.get());
            const auto i = idx.to_host(), u = up.to_host(), d = down.to_host(), x = xr.to_host();
            const int a = arg & 31;  // the hardware uses the low 5 bits of the lane argument
            for (int lane = 0; lane < 32; ++lane) {
                const int seg = lane / width, pos = lane % width;
                SCOPED_TRACE("width " + std::to_string(width) + " arg " + std::to_string(arg) +
                             " lane " + std::to_string(lane));
                EXPECT_EQ(i[lane], 100 + seg * width + a % width);
                EXPECT_EQ(u[lane], 100 + (pos >= a ? lane - a : lane));
                EXPECT_EQ(d[lane], 100 + (pos + a < width ? lane + a : lane));
                const int partner = lane ^ a;
                EXPECT_EQ(x[lane], 100 + (partner / width <= seg ? partner : lane));
            }
        }
    }
}

// Sums over segments of `width` lanes, twice: a tree with __shfl_down_sync (the sum lands
// in the segment's first lane) and a butterfly with __shfl_xor_sync (every lane gets it).
__global__ void segment_sums(int width, const double* in, double* down_sum, double* xor_sum) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    double a = in[i], b = in[i];
    for (int offset = width / 2; offset > 0; offset /= 2) {
        a += __shfl_down_sync(0xffffffffu, a, static_cast<unsigned>(offset), width);
        b += __shfl_xor_sync(0xffffffffu, b, offset, width);
    }
    down_sum[i] = a;
    xor_sum[i] = b;
}

TEST(CudaCpuWarp, ReductionsAtEveryWidth) {
    const int n = 4 * 64;
    std::vector<double> in(n);
    for (int i = 0; i < n; ++i) in[i] = 0.25 * i - 3;
    for (int width : {1, 2, 4, 8, 16, 32}) {
        DeviceVector<double> d_in(in), d_down(n), d_xor(n);
        launch(segment_sums, dim3(4), dim3(64), 0, width, d_in.get(), d_down.get(), d_xor.get());
        const auto down = d_down.to_host(), xr = d_xor.to_host();
        for (int i = 0; i < n; ++i) {
            const int first = i - i % width;
            const double sum = std::accumulate(in.begin() + first, in.begin() + first + width, 0.0);
            if (i == first) {
                EXPECT_EQ(down[i], sum) << "width " << width << " i " << i;
            }
            EXPECT_EQ(xr[i], sum) << "width " << width << " i " << i;
        }
    }
}

__global__ void votes(unsigned* ballot, int* any, int* all, unsigned* half_ballot) {
    const int t = threadIdx.x;
    const int lane = t % 32;
    ballot[t] = __ballot_sync(0xffffffffu, lane % 3 == 0);
    any[t] = __any_sync(0xffffffffu, lane == 20);  // the second warp has no lane 20
    all[t] = __all_sync(0xffffffffu, lane != 13) + 2 * __all_sync(0xffffffffu, lane < 32);
    half_ballot[t] = 0;
    if (lane < 16) half_ballot[t] = __ballot_sync(0x0000ffffu, lane & 1);
    __syncwarp();
}

TEST(CudaCpuWarp, VotesIncludingAPartialWarp) {
    const int n = 48;  // the second warp has 16 lanes: the missing ones count as absent
    DeviceVector<unsigned> ballot(n), half(n);
    DeviceVector<int> any(n), all(n);
    launch(votes, dim3(1), dim3(n), 0, ballot.get(), any.get(), all.get(), half.get());
    const auto b = ballot.to_host(), h = half.to_host();
    const auto a = any.to_host(), l = all.to_host();
    for (int t = 0; t < n; ++t) {
        const unsigned present = t < 32 ? 0xffffffffu : 0x0000ffffu;
        EXPECT_EQ(b[t], 0x49249249u & present) << t;
        EXPECT_EQ(a[t], t < 32 ? 1 : 0) << t;
        EXPECT_EQ(l[t], 2) << t;  // "lane != 13" fails in both warps, "lane < 32" holds
        EXPECT_EQ(h[t], t % 32 < 16 ? 0x0000aaaau : 0u) << t;
    }
}

// ---------------------------------------------------------------------------------------
// Atomics

/// Float max from atomicCAS on the bits: CUDA has no atomicMax for float.
__device__ float atomic_max_float(float* address, float value) {
    int* bits = reinterpret_cast<int*>(address);
    int old = atomicCAS(bits, 0, 0);  // an atomic read (swaps 0 for 0)
    while (__int_as_float(old) < value) {
        const int assumed = old;
        old = atomicCAS(bits, assumed, __float_as_int(value));
        if (old == assumed) break;
    }
    return __int_as_float(old);
}

__global__ void contended_atomics(int* count, float* fsum, unsigned long long* usum, int* imax,
                                  int* imin, float* fmax, int* slot, long long* exchanged) {
    const int gid = blockIdx.x * blockDim.x + threadIdx.x;
    atomicAdd(count, 1);
    atomicAdd(fsum, 1.0f);
    atomicAdd(usum, static_cast<unsigned long long>(gid));
    atomicMax(imax, gid);
    atomicMin(imin, -gid);
    atomic_max_float(fmax, 0.5f * static_cast<float>(gid));
    const int old = atomicExch(slot, gid);
    atomicAdd(reinterpret_cast<unsigned long long*>(exchanged), static_cast<unsigned long long>(old));
}

TEST(CudaCpuAtomics, ManyBlocksManyThreads) {
    gl::cuda::cpu::set_workers(2);
    const int blocks = 64, threads = 256, n = blocks * threads;
    for (const Schedule& s : {Schedule{Order::in_order, 0}, Schedule{Order::random, 5}}) {
        ScopedSchedule scope(s);
        DeviceVector<int> count(std::vector<int>{0}), imax(std::vector<int>{-1}),
            imin(std::vector<int>{1}), slot(std::vector<int>{0});
        DeviceVector<float> fsum(std::vector<float>{0}), fmax(std::vector<float>{-1});
        DeviceVector<unsigned long long> usum(std::vector<unsigned long long>{0});
        DeviceVector<long long> exchanged(std::vector<long long>{0});
        launch(contended_atomics, dim3(blocks), dim3(threads), 0, count.get(), fsum.get(),
               usum.get(), imax.get(), imin.get(), fmax.get(), slot.get(), exchanged.get());
        const long long gid_sum = static_cast<long long>(n) * (n - 1) / 2;
        EXPECT_EQ(count.to_host()[0], n);
        EXPECT_EQ(fsum.to_host()[0], static_cast<float>(n));  // exact: n < 2^24
        EXPECT_EQ(usum.to_host()[0], static_cast<unsigned long long>(gid_sum));
        EXPECT_EQ(imax.to_host()[0], n - 1);
        EXPECT_EQ(imin.to_host()[0], -(n - 1));
        EXPECT_EQ(fmax.to_host()[0], 0.5f * static_cast<float>(n - 1));
        // Every value written to the slot comes out exactly once: by an exchange or at the end.
        EXPECT_EQ(exchanged.to_host()[0] + slot.to_host()[0], gid_sum);
    }
}

// ---------------------------------------------------------------------------------------
// Deadlocks, divergence and exceptions are reported, never hang

__global__ void barrier_in_a_branch(int* out) {
    if (blockIdx.x == 2 && threadIdx.x < 16) __syncthreads();  // threads 16-31 never come
    out[blockIdx.x * blockDim.x + threadIdx.x] = 1;
}

TEST(CudaCpuDeadlock, DivergentBarrierIsReported) {
    for (const Schedule& s : kSchedules) {
        ScopedSchedule scope(s);
        DeviceVector<int> out(4 * 32);
        const std::string msg = error_of(
            [&] { launch(barrier_in_a_branch, dim3(4), dim3(32), 0, out.get()); },
            ErrorCode::barrier_divergence);
        EXPECT_NE(msg.find("barrier_in_a_branch"), std::string::npos) << msg;
        EXPECT_NE(msg.find("block (2,0,0)"), std::string::npos) << msg;
        EXPECT_NE(msg.find("threads 0-15: wait at __syncthreads() at"), std::string::npos) << msg;
        EXPECT_NE(msg.find("test_runtime.cpp:"), std::string::npos) << msg;
        EXPECT_NE(msg.find("threads 16-31: exited"), std::string::npos) << msg;
    }
}

__global__ void two_different_barriers(int* out) {
    if (threadIdx.x % 2 == 0)
        __syncthreads();
    else
        __syncthreads();
    out[threadIdx.x] = 1;
}

TEST(CudaCpuDeadlock, DifferentBarriersAreReported) {
    DeviceVector<int> out(64);
    const std::string msg = error_of(
        [&] { launch(two_different_barriers, dim3(1), dim3(64), 0, out.get()); },
        ErrorCode::barrier_divergence);
    EXPECT_NE(msg.find("threads 0, 2, 4"), std::string::npos) << msg;
    EXPECT_NE(msg.find("threads 1, 3, 5"), std::string::npos) << msg;
}

__global__ void shuffle_after_early_exit(int* out) {
    if (threadIdx.x >= 8) return;
    out[threadIdx.x] = __shfl_sync(0xffffffffu, static_cast<int>(threadIdx.x), 0);
}

TEST(CudaCpuDeadlock, WarpOperationWithExitedLanesIsReported) {
    DeviceVector<int> out(32);
    const std::string msg = error_of(
        [&] { launch(shuffle_after_early_exit, dim3(1), dim3(32), 0, out.get()); },
        ErrorCode::barrier_divergence);
    EXPECT_NE(msg.find("threads 0-7: wait at __shfl_sync(mask 0xffffffff)"), std::string::npos)
        << msg;
    EXPECT_NE(msg.find("threads 8-31: exited"), std::string::npos) << msg;
}

__global__ void shuffle_with_mask_missing_self(int* out) {
    out[threadIdx.x] = __shfl_sync(0x1u, 1, 0);  // lanes 1-31 are not in their own mask
}

TEST(CudaCpuDeadlock, MaskWithoutTheCallingLaneIsAnError) {
    DeviceVector<int> out(32);
    const std::string msg = error_of(
        [&] { launch(shuffle_with_mask_missing_self, dim3(1), dim3(32), 0, out.get()); },
        ErrorCode::kernel_exception);
    EXPECT_NE(msg.find("does not include the lane itself"), std::string::npos) << msg;
}

struct LiveObjects {
    static inline std::atomic<int> count{0};
    LiveObjects() { ++count; }
    ~LiveObjects() { --count; }
    LiveObjects(const LiveObjects&) = delete;
    LiveObjects& operator=(const LiveObjects&) = delete;
};

__global__ void throw_in_one_thread(int* out) {
    if (blockIdx.x == 1 && threadIdx.x == 5) throw std::runtime_error("boom");
    out[blockIdx.x * blockDim.x + threadIdx.x] = 1;
}

__global__ void throw_between_barriers(int* out) {
    LiveObjects alive;  // destroyed when the thread ends or is unwound
    __syncthreads();
    if (threadIdx.x == 7) throw std::runtime_error("after the first barrier");
    __syncthreads();
    out[threadIdx.x] = 1;
}

TEST(CudaCpuExceptions, SurfaceFromTheLaunch) {
    DeviceVector<int> out(4 * 64);
    const std::string msg = error_of(
        [&] { launch(throw_in_one_thread, dim3(4), dim3(64), 0, out.get()); },
        ErrorCode::kernel_exception);
    EXPECT_NE(msg.find("thread (5,0,0) of block (1,0,0) threw: boom"), std::string::npos) << msg;
    // The original exception is nested inside.
    try {
        launch(throw_in_one_thread, dim3(4), dim3(64), 0, out.get());
    } catch (const gl::cuda::Error& e) {
        EXPECT_THROW(std::rethrow_if_nested(e), std::runtime_error);
    }
}

TEST(CudaCpuExceptions, SuspendedThreadsAreUnwound) {
    for (const Schedule& s : kSchedules) {
        ScopedSchedule scope(s);
        DeviceVector<int> out(64);
        const std::string msg = error_of(
            [&] { launch(throw_between_barriers, dim3(3), dim3(64), 0, out.get()); },
            ErrorCode::kernel_exception);
        EXPECT_NE(msg.find("after the first barrier"), std::string::npos) << msg;
        EXPECT_EQ(LiveObjects::count.load(), 0) << "every suspended thread ran its destructors";
    }
    // The runtime still works afterwards.
    std::vector<int> in(256);
    std::iota(in.begin(), in.end(), 0);
    DeviceVector<int> d_in(in), d_out(256);
    launch(reverse_in_block, dim3(1), dim3(256), 0, d_in.get(), d_out.get());
    EXPECT_EQ(d_out.to_host()[0], 255);
}

__global__ void launch_from_kernel(int* out) {
    launch(write_indices, dim3(1), dim3(1), 0, reinterpret_cast<uint3*>(out),
           reinterpret_cast<uint3*>(out));
}

TEST(CudaCpuExceptions, NestedLaunchIsAnError) {
    DeviceVector<int> out(8);
    const std::string msg = error_of(
        [&] { launch(launch_from_kernel, dim3(1), dim3(1), 0, out.get()); },
        ErrorCode::kernel_exception);
    EXPECT_NE(msg.find("dynamic parallelism"), std::string::npos) << msg;
}

// ---------------------------------------------------------------------------------------
// Fibers only where needed

__global__ void add_one(int n, float* x) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] += 1.0f;
}

TEST(CudaCpuFibers, BarrierFreeBlocksRunWithoutFibers) {
    const int n = 10000;
    DeviceVector<float> x(n);
    x.fill_bytes(0);
    gl::cuda::cpu::reset_runtime_stats();
    launch(add_one, dim3((n + 255) / 256), dim3(256), 0, n, x.get());
    auto stats = gl::cuda::cpu::runtime_stats();
    EXPECT_EQ(stats.blocks, 40u);
    EXPECT_EQ(stats.fibers, 0u);
    EXPECT_EQ(stats.fiber_blocks, 0u);

    // A block with a barrier moves onto fibers: one per thread but the first (which keeps
    // the worker's stack), plus one for the scheduler.
    std::vector<int> in(2 * 256, 1);
    DeviceVector<int> d_in(in), d_out(in.size());
    gl::cuda::cpu::reset_runtime_stats();
    launch(reverse_in_block, dim3(2), dim3(256), 0, d_in.get(), d_out.get());
    stats = gl::cuda::cpu::runtime_stats();
    EXPECT_EQ(stats.fiber_blocks, 2u);
    EXPECT_EQ(stats.fibers, 2u * 256u);

    // Without lazy fibers every thread gets one.
    gl::cuda::cpu::set_lazy_fibers(false);
    gl::cuda::cpu::reset_runtime_stats();
    launch(add_one, dim3(1), dim3(256), 0, n, x.get());
    stats = gl::cuda::cpu::runtime_stats();
    gl::cuda::cpu::set_lazy_fibers(true);
    EXPECT_EQ(stats.fibers, 257u);
    EXPECT_EQ(x.to_host()[0], 2.0f);
}

// ---------------------------------------------------------------------------------------
// Memory counters

template <class Access>
__global__ void strided_copy(int stride, global_ptr<Access, const float> in,
                             global_ptr<Access, float> out) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    out[i] = in[i * stride];
}

TEST(CudaCpuCounters, CoalescedAndStridedGlobalLoads) {
    const int warps = 4, n = 32 * warps;
    DeviceVector<float> in(n * 32), out(n);
    in.fill_bytes(0);
    for (const Schedule& s : kSchedules) {
        ScopedSchedule scope(s);
        for (int stride : {1, 2, 32}) {
            gl::cuda::cpu::reset_memory_counters();
            launch(strided_copy<Counted>, dim3(2), dim3(n / 2), 0, stride, in.get(), out.get());
            const auto c = gl::cuda::cpu::memory_counters();
            // Each warp-wide load is one request; 32 consecutive floats fill 4 sectors of
            // 32 bytes, every other float 8, floats 128 bytes apart one sector each.
            EXPECT_EQ(c.global_loads.requests, 4u);
            EXPECT_EQ(c.global_loads.thread_accesses, 128u);
            EXPECT_EQ(c.global_loads.bytes, 512u);
            EXPECT_EQ(c.global_loads.sectors, 4u * (stride == 1 ? 4 : stride == 2 ? 8 : 32));
            EXPECT_EQ(c.global_stores.requests, 4u);
            EXPECT_EQ(c.global_stores.sectors, 16u);
            EXPECT_EQ(c.shared_loads.requests, 0u);
        }
    }
    // The Direct instantiation of the same kernel counts nothing.
    gl::cuda::cpu::reset_memory_counters();
    launch(strided_copy<Direct>, dim3(2), dim3(n / 2), 0, 1, in.get(), out.get());
    EXPECT_EQ(gl::cuda::cpu::memory_counters().global_loads.requests, 0u);
}

// One warp writes a 32x32 tile row by row, then each lane sums a row (so the warp reads a
// column at a time). With a pitch of 32 floats a column lies in one bank: 32-way conflicts.
// One float of padding per row (pitch 33) spreads a column over all 32 banks.
template <class Access, int kPitch>
__global__ void column_sums(global_ptr<Access, float> out) {
    __shared__ shared_array<Access, float, 32 * kPitch> tile;
    const int lane = threadIdx.x;
    for (int row = 0; row < 32; ++row) tile[row * kPitch + lane] = static_cast<float>(row * 32 + lane);
    __syncwarp();
    float sum = 0.0f;
    for (int col = 0; col < 32; ++col) sum += tile[lane * kPitch + col];
    out[lane] = sum;
}

TEST(CudaCpuCounters, SharedMemoryBankConflicts) {
    DeviceVector<float> out(32);
    gl::cuda::cpu::reset_memory_counters();
    launch(column_sums<Counted, 32>, dim3(1), dim3(32), 0, out.get());
    auto c = gl::cuda::cpu::memory_counters();
    EXPECT_EQ(c.shared_stores.requests, 32u);
    EXPECT_EQ(c.shared_stores.wavefronts, 32u);  // rows: conflict-free
    EXPECT_EQ(c.shared_stores.bank_conflicts, 0u);
    EXPECT_EQ(c.shared_loads.requests, 32u);
    EXPECT_EQ(c.shared_loads.wavefronts, 32u * 32u);  // columns: 32-way
    EXPECT_EQ(c.shared_loads.bank_conflicts, 32u * 31u);
    const auto conflicted = out.to_host();

    gl::cuda::cpu::reset_memory_counters();
    launch(column_sums<Counted, 33>, dim3(1), dim3(32), 0, out.get());
    c = gl::cuda::cpu::memory_counters();
    EXPECT_EQ(c.shared_loads.requests, 32u);
    EXPECT_EQ(c.shared_loads.wavefronts, 32u);
    EXPECT_EQ(c.shared_loads.bank_conflicts, 0u);
    EXPECT_EQ(out.to_host(), conflicted);
    for (int lane = 0; lane < 32; ++lane)
        EXPECT_EQ(conflicted[lane], 32.0f * (lane * 32) + 31.0f * 32.0f / 2.0f);
}

template <class Access>
__global__ void broadcast_and_vectors(global_ptr<Access, const float> in, global_ptr<Access, float> out) {
    __shared__ shared_array<Access, float, 4 * 32> s;
    const int lane = threadIdx.x;
    const float4 v = gl::cuda::reinterpret_ptr<float4>(in)[lane];      // 16 bytes per lane
    gl::cuda::reinterpret_ptr<float4>(&s[0])[lane] = v;                 // 16-byte shared stores
    __syncwarp();
    out[lane] = s[0] + in[0];                                          // everyone reads one word
}

TEST(CudaCpuCounters, BroadcastAndSixteenByteAccesses) {
    std::vector<float> host(128, 1.0f);
    DeviceVector<float> in(host), out(32);
    gl::cuda::cpu::reset_memory_counters();
    launch(broadcast_and_vectors<Counted>, dim3(1), dim3(32), 0, in.get(), out.get());
    const auto c = gl::cuda::cpu::memory_counters();
    // float4 loads: 512 contiguous bytes = 16 sectors; the broadcast load of in[0]: 1 sector.
    EXPECT_EQ(c.global_loads.requests, 2u);
    EXPECT_EQ(c.global_loads.sectors, 16u + 1u);
    EXPECT_EQ(c.global_loads.bytes, 32u * 16u + 32u * 4u);
    // 16-byte shared stores go in four quarter-warp phases, each conflict-free.
    EXPECT_EQ(c.shared_stores.wavefronts, 4u);
    EXPECT_EQ(c.shared_stores.bank_conflicts, 0u);
    // The broadcast read of one word: one wavefront.
    EXPECT_EQ(c.shared_loads.wavefronts, 1u);
    EXPECT_EQ(out.to_host()[3], 2.0f);
}

// ---------------------------------------------------------------------------------------
// Host API

TEST(CudaCpuHostApi, MistakesThatWouldCrashAGpuThrow) {
    std::vector<float> host(16, 1.0f);
    DeviceVector<float> d(16);
    error_of([&] { gl::cuda::free(host.data()); }, ErrorCode::invalid_device_pointer);
    error_of(
        [&] {
            gl::cuda::memcpy(host.data(), d.get(), 64, gl::cuda::CopyKind::host_to_device);  // swapped
        },
        ErrorCode::invalid_device_pointer);
    error_of([&] { gl::cuda::memcpy(d.get(), host.data(), 128, gl::cuda::CopyKind::host_to_device); },
             ErrorCode::invalid_value);
    gl::cuda::Event start, stop;
    start.record();
    gl::cuda::memcpy(d.get(), host.data(), 64, gl::cuda::CopyKind::host_to_device);
    stop.record();
    stop.synchronize();
    EXPECT_GE(gl::cuda::Event::elapsed_ms(start, stop), 0.0f);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(d.get()) % 256, 0u);
    EXPECT_NE(gl::cuda::device_name().find("CPU runtime"), std::string::npos);
}

// ---------------------------------------------------------------------------------------
// The emulation against the hardware: the same kernels (semantics_kernels.cuh) on both

TEST(CudaCpuMatchesGpu, ShufflesVotesAtomicsAndSharedMemory) {
    const gl::test::SemanticsResults cpu = gl::test::semantics_on_cpu();
    ASSERT_EQ(cpu.shuffles.size(), 6u * 8u * 128u);
    const long long n = 64 * 256;
    EXPECT_EQ(cpu.atomics[1], n * (n - 1) / 2);  // sum of the thread indices
    EXPECT_EQ(cpu.atomics[7], cpu.atomics[1]);   // every exchanged value came out once
#if !GRADLAB_HAVE_CUDA
    GTEST_SKIP() << "needs a CUDA device: this build has no CUDA (nvcc was not found when meson "
                    "configured it)";
#else
    const gl::cuda::DeviceStatus status = gl::cuda::device_status();
    if (!status.available) GTEST_SKIP() << "needs a CUDA device: " << status.message;
    const gl::test::SemanticsResults gpu = gl::test::semantics_on_gpu();
    EXPECT_EQ(cpu.shuffles, gpu.shuffles);
    EXPECT_EQ(cpu.segment_sums, gpu.segment_sums);
    EXPECT_EQ(cpu.votes, gpu.votes);
    // atomics[0], the sum of the values atomicExch handed back, depends on which thread
    // exchanged last, and nothing fixes that order on a GPU (an H200 and the CPU runtime
    // differed there and nowhere else). What does not depend on the order must agree:
    // every other entry, and a last exchanger that is one of the threads.
    const auto without_order = [](std::vector<long long> a) { return std::vector<long long>(a.begin() + 1, a.end()); };
    EXPECT_EQ(without_order(cpu.atomics), without_order(gpu.atomics));
    for (const auto* r : {&cpu, &gpu}) {
        const long long last = r->atomics[7] - r->atomics[0];  // the final value of the exchanged word
        EXPECT_TRUE(last >= 0 && last < n) << "last exchanged thread index " << last;
    }
    EXPECT_EQ(cpu.reversed, gpu.reversed);
#endif
}

}  // namespace
