// Tests of streams, events, page-locked memory and the timeline on the CPU runtime
// (core/cuda_cpu/streams.hpp, timeline.hpp). Overlap is shown without timing: a kernel
// that waits, inside its run, for a copy on another stream to land can only finish if the
// two really run at the same time.
#include <gtest/gtest.h>

#include <linux/capability.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <string>
#include <thread>
#include <vector>

#include "cuda_cpu/cuda_compat.hpp"
#include "cuda_error_of.hpp"
#include "cuda_cpu/streams.hpp"
#include "cuda_cpu/timeline.hpp"

namespace {

using gl::cuda::CopyKind;
using gl::cuda::DeviceBuffer;
using gl::cuda::ErrorCode;
using gl::cuda::Event;
using gl::cuda::PinnedBuffer;
using gl::cuda::Stream;
using gl::cuda::cpu::OpKind;
using gl::cuda::cpu::ScopedStreamSchedule;
using gl::cuda::cpu::ScopedTimeline;
using gl::cuda::cpu::TimelineEntry;

__global__ void add_one(int n, float* x) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] += 1.0f;
}

// Says it started (*started = 1), then spins (up to ~5 s) until *flag becomes nonzero;
// records whether it saw it.
__global__ void wait_for_flag(const int* flag, int* saw_it, int* started) {
    __atomic_store_n(started, 1, __ATOMIC_RELEASE);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (__atomic_load_n(flag, __ATOMIC_ACQUIRE) == 0)
        if (std::chrono::steady_clock::now() > deadline) return;
    *saw_it = 1;
}

__global__ void throw_in_kernel() { throw std::runtime_error("kernel failed on purpose"); }

// A gl::cuda::Error with @p code whose message contains @p fragment.
template <class F>
void expect_error(F&& f, ErrorCode code, const std::string& fragment = "") {
    const std::string message = gl::test::error_of(std::forward<F>(f), code);
    EXPECT_NE(message.find(fragment), std::string::npos) << message;
}

TEST(CudaCpuStreams, WorkOnAStreamRunsInOrder) {
    constexpr int n = 1000;
    PinnedBuffer<float> host(n);
    for (int i = 0; i < n; ++i) host.data()[i] = static_cast<float>(i);
    DeviceBuffer<float> dev(n);
    Stream s;
    gl::cuda::memcpy_async(dev.data(), host.data(), n * sizeof(float), CopyKind::host_to_device, s);
    for (int k = 0; k < 3; ++k) gl::cuda::launch(s, add_one, dim3((n + 127) / 128), dim3(128), 0, n, dev.data());
    gl::cuda::memcpy_async(host.data(), dev.data(), n * sizeof(float), CopyKind::device_to_host, s);
    s.synchronize();
    for (int i = 0; i < n; ++i) ASSERT_EQ(host.data()[i], static_cast<float>(i) + 3.0f) << i;
    EXPECT_GT(s.id(), 0);
}

TEST(CudaCpuStreams, ACopyOnOneStreamLandsWhileAKernelRunsOnAnother) {
    PinnedBuffer<int> one(1);
    one.data()[0] = 1;
    DeviceBuffer<int> flag(1), saw(1), started(1);
    gl::cuda::memset(flag.data(), 0, sizeof(int));
    gl::cuda::memset(saw.data(), 0, sizeof(int));
    gl::cuda::memset(started.data(), 0, sizeof(int));
    ScopedTimeline recording;
    Stream compute, copy;
    gl::cuda::launch(compute, wait_for_flag, dim3(1), dim3(1), 0, flag.data(), saw.data(), started.data());
    // Queue the copy once the kernel runs (CPU runtime: device memory is readable here), so
    // the copy can only land while the kernel is running.
    while (__atomic_load_n(started.data(), __ATOMIC_ACQUIRE) == 0) std::this_thread::yield();
    gl::cuda::memcpy_async(flag.data(), one.data(), sizeof(int), CopyKind::host_to_device, copy);
    compute.synchronize();
    copy.synchronize();
    int saw_it = 0;
    gl::cuda::memcpy(&saw_it, saw.data(), sizeof(int), CopyKind::device_to_host);
    EXPECT_EQ(saw_it, 1) << "the kernel never saw the copy: the streams did not run concurrently";

    const std::vector<TimelineEntry> t = gl::cuda::cpu::timeline();
    const TimelineEntry* kernel = nullptr;
    const TimelineEntry* h2d = nullptr;
    for (const TimelineEntry& e : t) {
        if (e.kind == OpKind::kernel && e.stream == compute.id()) kernel = &e;
        if (e.kind == OpKind::copy_h2d && e.stream == copy.id()) h2d = &e;
    }
    ASSERT_TRUE(kernel && h2d) << "the timeline lacks the kernel or the copy";
    EXPECT_FALSE(h2d->pageable);
    EXPECT_EQ(h2d->bytes, sizeof(int));
    EXPECT_LE(kernel->start_us, h2d->start_us);  // the copy was queued once the kernel ran
    EXPECT_TRUE(kernel->overlaps(*h2d));         // and the kernel could not end before it landed
    EXPECT_TRUE(gl::cuda::cpu::may_overlap(*kernel, *h2d)) << "no event orders them";
    EXPECT_GT(gl::cuda::cpu::overlap_us(t, gl::cuda::cpu::is_copy, gl::cuda::cpu::is_kernel), 0.0);
}

TEST(CudaCpuStreams, StreamWaitEventOrdersWorkAcrossStreamsUnderEverySchedule) {
    constexpr int n = 1 << 16;
    PinnedBuffer<float> in(n), out(n);
    for (int i = 0; i < n; ++i) in.data()[i] = static_cast<float>(i % 97);
    for (std::uint64_t seed = 1; seed <= 4; ++seed) {
        ScopedStreamSchedule randomized({true, seed, 400});
        ScopedTimeline recording;
        DeviceBuffer<float> dev(n);
        Stream copy, compute;
        Event copied, computed;
        gl::cuda::memcpy_async(dev.data(), in.data(), n * sizeof(float), CopyKind::host_to_device, copy);
        copied.record(copy);
        compute.wait(copied);
        gl::cuda::launch(compute, add_one, dim3(n / 256), dim3(256), 0, n, dev.data());
        computed.record(compute);
        copy.wait(computed);
        gl::cuda::memcpy_async(out.data(), dev.data(), n * sizeof(float), CopyKind::device_to_host, copy);
        gl::cuda::synchronize();  // waits for every stream
        EXPECT_TRUE(copied.query() && computed.query());
        // The order the events imposed, read back from the timeline's vector clocks.
        std::vector<TimelineEntry> ops;
        for (const TimelineEntry& e : gl::cuda::cpu::timeline())
            if (e.stream != 0) ops.push_back(e);
        ASSERT_EQ(ops.size(), 3u);
        std::sort(ops.begin(), ops.end(), [](auto& a, auto& b) { return a.start_us < b.start_us; });
        EXPECT_EQ(ops[0].kind, OpKind::copy_h2d);
        EXPECT_EQ(ops[1].kind, OpKind::kernel);
        EXPECT_TRUE(gl::cuda::cpu::happens_before(ops[0], ops[1]));
        EXPECT_TRUE(gl::cuda::cpu::happens_before(ops[1], ops[2]));
        EXPECT_TRUE(gl::cuda::cpu::happens_before(ops[0], ops[2]));
        EXPECT_FALSE(gl::cuda::cpu::happens_before(ops[2], ops[0]));
        EXPECT_FALSE(gl::cuda::cpu::may_overlap(ops[0], ops[1]));
        for (int i = 0; i < n; ++i)
            ASSERT_EQ(out.data()[i], in.data()[i] + 1.0f) << "seed " << seed << ", element " << i;
    }
}

// The default stream runs on the host thread that issues it: a lane of the timeline of its
// own. Only events order it against a stream (as on a GPU, where a plain launch is merely
// queued when the host moves on): a copy queued after a default-stream kernel without a
// wait may run alongside it; with an event recorded on the default stream it comes after;
// and default-stream work issued after default_stream_wait(copied) comes after the copy
// and reads its data under every schedule.
TEST(CudaCpuStreams, TheDefaultStreamIsALaneThatOnlyEventsOrderAgainstStreams) {
    constexpr int n = 1 << 14;
    constexpr std::size_t bytes = n * sizeof(float);
    PinnedBuffer<float> in(n), out(n);
    for (int i = 0; i < n; ++i) in.data()[i] = static_cast<float>(i % 13);
    for (std::uint64_t seed = 1; seed <= 3; ++seed) {
        ScopedStreamSchedule randomized({true, seed, 300});
        DeviceBuffer<float> a(n), b(n), c(n);
        Stream copy;
        Event host_mark, copied;
        ScopedTimeline recording;
        gl::cuda::launch(add_one, dim3(n / 256), dim3(256), 0, n, a.data());             // k1
        gl::cuda::memcpy_async(c.data(), in.data(), bytes, CopyKind::host_to_device, copy);  // c1: no wait
        host_mark.record();
        copy.wait(host_mark);
        gl::cuda::memcpy_async(b.data(), in.data(), bytes, CopyKind::host_to_device, copy);  // c2: after k1
        copied.record(copy);
        gl::cuda::default_stream_wait(copied);
        gl::cuda::launch(add_one, dim3(n / 256), dim3(256), 0, n, b.data());             // k2: after c2
        gl::cuda::memcpy(out.data(), b.data(), bytes, CopyKind::device_to_host);
        copy.synchronize();
        for (int i = 0; i < n; ++i)
            ASSERT_EQ(out.data()[i], in.data()[i] + 1.0f) << "seed " << seed << ": k2 ran before c2 landed, at " << i;

        std::vector<TimelineEntry> kernels, copies;
        for (const TimelineEntry& e : gl::cuda::cpu::timeline()) {
            if (e.kind == OpKind::kernel) kernels.push_back(e);
            if (e.kind == OpKind::copy_h2d && e.stream == copy.id()) copies.push_back(e);
        }
        ASSERT_EQ(kernels.size(), 2u);
        ASSERT_EQ(copies.size(), 2u);
        auto by_seq = [](const TimelineEntry& x, const TimelineEntry& y) { return x.seq < y.seq; };
        std::sort(kernels.begin(), kernels.end(), by_seq);
        std::sort(copies.begin(), copies.end(), by_seq);
        const TimelineEntry &k1 = kernels[0], &k2 = kernels[1], &c1 = copies[0], &c2 = copies[1];
        EXPECT_EQ(k1.stream, 0);
        EXPECT_GT(k1.host_thread, 0) << "default-stream work names its host thread";
        EXPECT_EQ(gl::cuda::cpu::lane_of(k1), gl::cuda::cpu::lane_of(k2));
        EXPECT_TRUE(gl::cuda::cpu::happens_before(k1, k2)) << "one lane runs in order";
        EXPECT_TRUE(gl::cuda::cpu::may_overlap(k1, c1)) << "queued later is not ordered after, without an event";
        EXPECT_TRUE(gl::cuda::cpu::happens_before(k1, c2)) << "the default-stream event orders c2 after k1";
        EXPECT_TRUE(gl::cuda::cpu::happens_before(c2, k2)) << "default_stream_wait orders k2 after c2";
        EXPECT_TRUE(gl::cuda::cpu::happens_before(c1, k2));
        EXPECT_FALSE(gl::cuda::cpu::happens_before(k2, c2));
    }
}

TEST(CudaCpuStreams, TheRandomizedScheduleExposesAMissingWait) {
    constexpr int n = 1 << 16;
    PinnedBuffer<float> in(n), out(n);
    for (int i = 0; i < n; ++i) in.data()[i] = 1.0f;
    int wrong_runs = 0;
    for (std::uint64_t seed = 1; seed <= 16 && wrong_runs == 0; ++seed) {
        ScopedStreamSchedule randomized({true, seed, 1000});
        DeviceBuffer<float> dev(n);  // NaN until the copy lands
        Stream copy, compute;
        gl::cuda::memcpy_async(dev.data(), in.data(), n * sizeof(float), CopyKind::host_to_device, copy);
        // Missing: compute.wait(an event recorded on copy after the copy).
        gl::cuda::launch(compute, add_one, dim3(n / 256), dim3(256), 0, n, dev.data());
        gl::cuda::synchronize();
        gl::cuda::memcpy(out.data(), dev.data(), n * sizeof(float), CopyKind::device_to_host);
        for (int i = 0; i < n; ++i)
            if (out.data()[i] != 2.0f) {
                ++wrong_runs;
                break;
            }
    }
    EXPECT_GT(wrong_runs, 0) << "16 randomized schedules never ran the kernel before its copy";
}

TEST(CudaCpuStreams, EventsTimeAndReportCompletion) {
    Stream s;
    Event never, start, stop;
    EXPECT_TRUE(never.query());  // nothing to wait for
    never.synchronize();
    expect_error([&] { (void)Event::elapsed_ms(never, stop); }, ErrorCode::invalid_value, "never recorded");
    start.record(s);
    gl::cuda::launch(s, add_one, dim3(1), dim3(1), 0, 0, static_cast<float*>(nullptr));
    stop.record(s);
    stop.synchronize();
    EXPECT_TRUE(stop.query());
    EXPECT_GE(Event::elapsed_ms(start, stop), 0.0f);
}

TEST(CudaCpuStreams, ANonBlockingCopyFromPinnedMemoryReturnsBeforeItRuns) {
    // The copy stream waits for an event behind a kernel that waits for the host: the copy
    // cannot have run when memcpy_async returns, and it runs once the host lets go.
    PinnedBuffer<int> src(1), one(1);
    src.data()[0] = 42;
    one.data()[0] = 1;
    DeviceBuffer<int> flag(1), saw(1), dst(1), started(1);
    gl::cuda::memset(flag.data(), 0, sizeof(int));
    gl::cuda::memset(dst.data(), 0, sizeof(int));
    Stream blocker, copy, host_side;
    Event released;
    gl::cuda::launch(blocker, wait_for_flag, dim3(1), dim3(1), 0, flag.data(), saw.data(), started.data());
    released.record(blocker);
    copy.wait(released);
    gl::cuda::memcpy_async(dst.data(), src.data(), sizeof(int), CopyKind::host_to_device, copy);
    int now = -1;
    gl::cuda::memcpy(&now, dst.data(), sizeof(int), CopyKind::device_to_host);
    EXPECT_EQ(now, 0) << "the copy ran before the event it waits for";
    EXPECT_FALSE(released.query());
    gl::cuda::memcpy_async(flag.data(), one.data(), sizeof(int), CopyKind::host_to_device, host_side);
    copy.synchronize();
    gl::cuda::memcpy(&now, dst.data(), sizeof(int), CopyKind::device_to_host);
    EXPECT_EQ(now, 42);
}

TEST(CudaCpuStreams, ACopyFromPageableMemoryIsStagedAndTheHostWaits) {
    constexpr int n = 4096;
    std::vector<float> pageable(n, 3.0f);
    DeviceBuffer<float> dev(n);
    ScopedTimeline recording;
    Stream s;
    gl::cuda::memcpy_async(dev.data(), pageable.data(), n * sizeof(float), CopyKind::host_to_device, s);
    // No synchronize: the copy is done when memcpy_async returns.
    const std::vector<TimelineEntry> t = gl::cuda::cpu::timeline();
    ASSERT_EQ(t.size(), 1u);
    EXPECT_TRUE(t[0].pageable);
    EXPECT_EQ(t[0].stream, s.id());
    std::vector<float> back(n);
    gl::cuda::memcpy(back.data(), dev.data(), n * sizeof(float), CopyKind::device_to_host);
    EXPECT_EQ(back, pageable);
    EXPECT_FALSE(gl::cuda::is_page_locked(pageable.data(), 4));
}

TEST(CudaCpuStreams, AModeledLinkMakesHostDeviceCopiesLastBytesOverBandwidth) {
    constexpr std::size_t n = 1 << 18;  // 1 MiB: 1 ms at 1 GB/s
    PinnedBuffer<float> host(n);
    DeviceBuffer<float> dev(n), other(n);
    gl::cuda::cpu::set_link_bandwidth(1.0);
    {
        ScopedTimeline recording;
        gl::cuda::memcpy(dev.data(), host.data(), n * sizeof(float), CopyKind::host_to_device);
        gl::cuda::memcpy(other.data(), dev.data(), n * sizeof(float), CopyKind::device_to_device);
        const std::vector<TimelineEntry> t = gl::cuda::cpu::timeline();
        ASSERT_EQ(t.size(), 2u);
        EXPECT_GE(t[0].end_us - t[0].start_us, 1048.0) << "the link's lower bound: bytes / (1 GB/s)";
        EXPECT_EQ(t[1].kind, OpKind::copy_d2d);  // within the device: not over the link
    }
    gl::cuda::cpu::set_link_bandwidth(0);
    EXPECT_EQ(gl::cuda::cpu::link_bandwidth(), 0.0);
    expect_error([] { gl::cuda::cpu::set_link_bandwidth(-1); }, ErrorCode::invalid_value);
}

TEST(CudaCpuStreams, ErrorsSurfaceWhereCudaReportsThem) {
    Stream s;
    float host = 0;
    DeviceBuffer<float> dev(4);
    // Bad pointers and bad configurations: at the call.
    expect_error([&] { gl::cuda::memcpy_async(&host, dev.data(), 4, CopyKind::host_to_device, s); },
                 ErrorCode::invalid_device_pointer);
    expect_error([&] { gl::cuda::launch(s, add_one, dim3(1), dim3(2048), 0, 4, dev.data()); },
                 ErrorCode::invalid_configuration);
    // A failure inside a kernel: at the next synchronize, once.
    gl::cuda::launch(s, throw_in_kernel, dim3(1), dim3(1), 0);
    expect_error([&] { s.synchronize(); }, ErrorCode::kernel_exception);
    s.synchronize();
    expect_error([&] { gl::cuda::host_free(&host); }, ErrorCode::invalid_value, "host_alloc");
}

TEST(CudaCpuStreams, TimelineIntervalArithmetic) {
    auto entry = [](OpKind k, double a, double b) {
        TimelineEntry e;
        e.kind = k;
        e.start_us = a;
        e.end_us = b;
        return e;
    };
    const std::vector<TimelineEntry> t = {entry(OpKind::copy_h2d, 0, 10), entry(OpKind::copy_d2h, 5, 12),
                                          entry(OpKind::kernel, 8, 20), entry(OpKind::kernel, 25, 30),
                                          entry(OpKind::copy_h2d, 28, 40)};
    using gl::cuda::cpu::is_copy;
    using gl::cuda::cpu::is_kernel;
    EXPECT_DOUBLE_EQ(gl::cuda::cpu::busy_us(t, is_copy), 12.0 + 12.0);
    EXPECT_DOUBLE_EQ(gl::cuda::cpu::busy_us(t, is_kernel), 12.0 + 5.0);
    EXPECT_DOUBLE_EQ(gl::cuda::cpu::overlap_us(t, is_copy, is_kernel), 4.0 + 2.0);
}

// Drops CAP_IPC_LOCK from this (forked) process, so the lock limit applies even to root.
bool drop_ipc_lock_capability() {
    __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
    __user_cap_data_struct data[2]{};
    if (syscall(SYS_capget, &header, data) != 0) return false;
    data[CAP_IPC_LOCK / 32].effective &= ~(1u << (CAP_IPC_LOCK % 32));
    return syscall(SYS_capset, &header, data) == 0;
}

TEST(CudaCpuStreams, PinningPastTheLockLimitSaysWhatToDo) {
#if defined(__SANITIZE_ADDRESS__)
    GTEST_SKIP() << "AddressSanitizer replaces mlock with a no-op that always succeeds";
#endif
    const pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {  // exit codes: 0 the right error, 1 no error, 2 a wrong message, 3 setup
        const rlimit small{64 * 1024, 64 * 1024};
        if (!drop_ipc_lock_capability() || setrlimit(RLIMIT_MEMLOCK, &small) != 0) _exit(3);
        try {
            void* p = gl::cuda::host_alloc(4 << 20);
            gl::cuda::host_free(p);
            _exit(1);
        } catch (const gl::cuda::Error& e) {
            const std::string m = e.what();
            const bool clear = e.code() == ErrorCode::memory_allocation &&
                               m.find("65536 bytes") != std::string::npos &&
                               m.find("ulimit -l") != std::string::npos;
            _exit(clear ? 0 : 2);
        }
    }
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0) << "1: pinning 4 MiB under a 64 KiB limit succeeded; "
                                         "2: the error did not name the limit; 3: setup failed";
}

TEST(CudaCpuStreams, PinnedMemoryIsTrackedAndPageAligned) {
    PinnedBuffer<double> p(1000);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(p.data()) % static_cast<std::uintptr_t>(sysconf(_SC_PAGESIZE)), 0u);
    EXPECT_TRUE(gl::cuda::is_page_locked(p.data(), 1000 * sizeof(double)));
    EXPECT_TRUE(gl::cuda::is_page_locked(p.data() + 10, 8));
    EXPECT_EQ(gl::cuda::host_alloc(0), nullptr);
}

}  // namespace
