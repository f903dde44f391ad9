#include "device/device_pinned.hpp"

#include <cstdlib>
#include <mutex>
#include <new>
#include <unordered_set>

#include "base/error.hpp"
#include "device/device.hpp"
#include "kernels/cuda/tensor_ops.hpp"

namespace gl::device {
namespace {

class RuntimePinnedProvider final : public PinnedMemoryProvider {
public:
    explicit RuntimePinnedProvider(Device device) : device_(device) {}

    void* allocate(std::size_t bytes) override {
        if (bytes == 0) return nullptr;
        try {
            void* p = kernels_for(device_).host_alloc(bytes);
            locked_ += bytes;
            return p;
        } catch (const std::exception&) {
            // The runtime would not lock more: hand out ordinary memory and remember it.
            void* p = std::malloc(bytes);
            if (!p) throw std::bad_alloc();
            std::lock_guard lock(mutex_);
            unlocked_.insert(p);
            fallback_ += bytes;
            return p;
        }
    }

    void deallocate(void* ptr, std::size_t bytes) override {
        if (!ptr) return;
        {
            std::lock_guard lock(mutex_);
            if (unlocked_.erase(ptr) == 1) {
                fallback_ -= bytes;
                std::free(ptr);
                return;
            }
        }
        locked_ -= bytes;
        kernels_for(device_).host_free(ptr);
    }

    const char* name() const override { return device_.kind == DeviceKind::CUDA ? "cuda-pinned" : "cuda_cpu-pinned"; }
    std::size_t locked_bytes() const override { return locked_.load(); }
    std::size_t unlocked_fallback_bytes() const override { return fallback_.load(); }

private:
    Device device_;
    std::atomic<std::size_t> locked_{0}, fallback_{0};
    std::mutex mutex_;
    std::unordered_set<void*> unlocked_;
};

}  // namespace

PinnedMemoryProvider& pinned_host_memory(Device device) {
    check(!device.is_cpu(), "pinned_host_memory: the CPU has no device runtime; use default_pinned_provider()");
    // Never destroyed, like the device caches: pinned batches may outlive static destructors.
    static auto* cuda_cpu = new RuntimePinnedProvider(kCudaCpu);
    static auto* cuda = new RuntimePinnedProvider({DeviceKind::CUDA, 0});
    if (device.kind == DeviceKind::CudaCpu) return *cuda_cpu;
    check_available(device);
    return *cuda;
}

}  // namespace gl::device
