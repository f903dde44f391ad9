#include "device/device.hpp"

#include <atomic>
#include <string>

#include "base/error.hpp"
#include "cuda_cpu/device_status.hpp"
#include "profiler/profiler.hpp"

namespace gl::device {
namespace {

std::atomic<std::int64_t> g_syncs{0}, g_h2d{0}, g_h2d_bytes{0}, g_d2h{0};

/// Why @p device cannot run kernels, or "" when it can.
std::string why_unavailable(Device device) {
    if (device.kind != DeviceKind::CUDA) return {};
#if GRADLAB_HAVE_CUDA
    const gl::cuda::DeviceStatus status = gl::cuda::device_status();
    if (!status.available) return "the CUDA driver says: " + status.message;
    if (device.index != 0) return "only device cuda:0 is supported";
    return {};
#else
    return "this build has no CUDA (nvcc was not found when meson configured it)";
#endif
}

class DeviceAllocator final : public Allocator {
public:
    explicit DeviceAllocator(Device device) : device_(device) {}
    void* allocate(std::size_t bytes) override { return device_alloc(device_, bytes); }
    void deallocate(void* ptr, std::size_t bytes) override { device_free(device_, ptr, bytes); }
    const char* name() const override { return device_.kind == DeviceKind::CUDA ? "cuda" : "cuda_cpu"; }

private:
    Device device_;
};

}  // namespace

void check_available(Device device) {
    const std::string why = why_unavailable(device);
    if (!why.empty())
        throw Error("device " + device.str() + " is not available: " + why +
                    ". Use the device cuda_cpu (train --device cuda_cpu) to run the same CUDA kernels on the CPU runtime, "
                    "or --device cpu");
}

const kernels::DeviceKernels& kernels_for(Device device) {
    check(!device.is_cpu(), "kernels_for: the CPU has no CUDA kernels; CPU tensors use kernels/cpu/");
    if (device.kind == DeviceKind::CudaCpu) return kernels::cpu_runtime_kernels();
    check_available(device);
    return kernels::gpu_kernels();
}

void* device_alloc(Device device, std::size_t bytes) {
    if (bytes == 0) return nullptr;
    return kernels_for(device).malloc(bytes);
}

void device_free(Device device, void* ptr, std::size_t) {
    if (ptr) kernels_for(device).free(ptr);
}

namespace {

// Never destroyed (deliberately leaked, as PyTorch's is): the CUDA runtime may be unloaded
// before static destructors run, and returning cached blocks then would fail at exit.
memory::CachingAllocator& device_cache(Device device) {
    check(!device.is_cpu(), "device_allocator: CPU tensors use default_cpu_allocator()");
    static auto* raw_cuda_cpu = new DeviceAllocator(kCudaCpu);
    static auto* raw_cuda = new DeviceAllocator({DeviceKind::CUDA, 0});
    static auto* cuda_cpu = new memory::CachingAllocator(*raw_cuda_cpu);
    static auto* cuda = new memory::CachingAllocator(*raw_cuda);
    if (device.kind == DeviceKind::CudaCpu) return *cuda_cpu;
    check_available(device);
    return *cuda;
}

}  // namespace

Allocator& device_allocator(Device device) { return device_cache(device); }

memory::CacheStats device_cache_stats(Device device) { return device_cache(device).stats(); }

std::size_t device_empty_cache(Device device) { return device_cache(device).empty_cache(); }

TransferStats transfer_stats() { return {g_syncs.load(), g_h2d.load(), g_h2d_bytes.load(), g_d2h.load()}; }

void reset_transfer_stats() {
    g_syncs = 0;
    g_h2d = 0;
    g_h2d_bytes = 0;
    g_d2h = 0;
}

void copy(Device dst_device, void* dst, Device src_device, const void* src, std::size_t bytes) {
    using gl::cuda::CopyKind;
    if (bytes == 0) return;
    if (dst_device.is_cpu() && src_device.is_cpu()) {
        kernels::cpu_runtime_kernels().memcpy(dst, src, bytes, CopyKind::host_to_host);
        return;
    }
    if (!dst_device.is_cpu() && !src_device.is_cpu()) {
        check(dst_device == src_device, "copy: from " + src_device.str() + " to " + dst_device.str() +
                                            " is not supported; copy through the CPU (x.cpu().to(device))");
        kernels_for(dst_device).memcpy(dst, src, bytes, CopyKind::device_to_device);
        return;
    }
    if (dst_device.is_cpu()) {  // a device -> host copy waits for the device's queued work
        prof::Scope scope(prof::Category::Sync, "device_to_host (sync)");
        scope.set_work(0, static_cast<double>(bytes));
        kernels_for(src_device).memcpy(dst, src, bytes, CopyKind::device_to_host);
        ++g_syncs;
        ++g_d2h;
        return;
    }
    prof::Scope scope(prof::Category::Copy, "host_to_device");
    scope.set_work(0, static_cast<double>(bytes));
    kernels_for(dst_device).memcpy(dst, src, bytes, CopyKind::host_to_device);
    ++g_h2d;
    g_h2d_bytes += static_cast<std::int64_t>(bytes);
}

void synchronize(Device device) {
    if (device.is_cpu()) return;
    const prof::Scope scope(prof::Category::Sync, "synchronize");
    kernels_for(device).synchronize();
    ++g_syncs;
}

void copy_to_device_async(Device device, void* dst, const void* src, std::size_t bytes, void* stream) {
    if (bytes == 0) return;
    check(!device.is_cpu() && stream != nullptr, "copy_to_device_async: needs a device and a stream of its runtime");
    prof::Scope scope(prof::Category::Copy, "host_to_device (async)");
    scope.set_work(0, static_cast<double>(bytes));
    kernels_for(device).memcpy_async(dst, src, bytes, gl::cuda::CopyKind::host_to_device, stream);
    ++g_h2d;
    g_h2d_bytes += static_cast<std::int64_t>(bytes);
}

void wait_for_event(Device device, void* event) {
    const kernels::DeviceKernels& k = kernels_for(device);
    if (k.event_query(event)) return;  // done already: the host does not wait
    const prof::Scope scope(prof::Category::Sync, "event synchronize");
    k.event_synchronize(event);
    ++g_syncs;
}

}  // namespace gl::device
