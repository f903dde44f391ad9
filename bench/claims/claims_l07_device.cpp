// CKPT-3's device half (lab 07): a step's worth of device buffers allocated, written and
// freed through the device's caching allocator and through raw device allocation, each
// runtime allocation counted. On the GPU when there is one, else on the CPU runtime
// (cuda_cpu), where the counts hold and the times are not a GPU's.
#include <chrono>

#include "claims_l07_device.hpp"
#include "device/device.hpp"
#include "kernels/cuda/tensor_ops.hpp"
#include "memory/caching_allocator.hpp"

namespace gl::claims {
namespace {

/// Raw device memory (cudaMalloc / cudaFree), counting the runtime's allocations.
class CountingDeviceAllocator final : public Allocator {
public:
    explicit CountingDeviceAllocator(Device d) : d_(d) {}
    void* allocate(std::size_t bytes) override {
        ++calls;
        return device::device_alloc(d_, bytes);
    }
    void deallocate(void* ptr, std::size_t bytes) override { device::device_free(d_, ptr, bytes); }
    const char* name() const override { return "raw device"; }
    std::size_t calls = 0;

private:
    Device d_;
};

/// One step: every buffer allocated and written on the device (as a kernel writes its
/// output), then all freed; the device synchronised. Returns wall seconds.
double device_allocation_step(Allocator& a, Device d, const std::vector<std::size_t>& sizes) {
    const auto start = std::chrono::steady_clock::now();
    std::vector<void*> live;
    for (std::size_t s : sizes) {
        live.push_back(a.allocate(s));
        device::kernels_for(d).memset(live.back(), 1, s);
    }
    for (std::size_t i = 0; i < sizes.size(); ++i) a.deallocate(live[i], sizes[i]);
    device::synchronize(d);
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

Ckpt3DeviceMeasured measure_ckpt3_device(const std::vector<std::size_t>& sizes, int reps, std::string& device_name) {
    Device d = kCudaCpu;
    try {
        device::check_available({DeviceKind::CUDA, 0});
        d = {DeviceKind::CUDA, 0};
    } catch (const Error&) {
    }
    device_name = d.str();
    CountingDeviceAllocator raw(d), backing(d);
    memory::CachingAllocator cache(backing);
    (void)device_allocation_step(raw, d, sizes);  // warm-up: the cache fills, the runtime settles
    (void)device_allocation_step(cache, d, sizes);
    const std::size_t raw0 = raw.calls, cached0 = backing.calls;
    std::vector<double> raw_s, cached_s;
    for (int rep = 0; rep < reps; ++rep) {
        raw_s.push_back(device_allocation_step(raw, d, sizes));
        cached_s.push_back(device_allocation_step(cache, d, sizes));
    }
    Ckpt3DeviceMeasured m;
    m.on_gpu = d.kind == DeviceKind::CUDA;
    m.buffers_per_step = static_cast<double>(sizes.size());
    m.raw_calls_per_step = static_cast<double>(raw.calls - raw0) / reps;
    m.cached_calls_per_step = static_cast<double>(backing.calls - cached0) / reps;
    m.raw_seconds = median(raw_s);
    m.cached_seconds = median(cached_s);
    return m;
}

}  // namespace gl::claims
