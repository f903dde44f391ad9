#include "device/batch_upload.hpp"

#include <cstring>
#include <string>

#include "base/error.hpp"
#include "device/device.hpp"
#include "device/device_pinned.hpp"
#include "tensor/tensor.hpp"

namespace gl::device {
namespace {

/// Where the targets start in a slot's staging memory: after the inputs, aligned as a
/// device allocation is, so each copy starts on a boundary the copy engine likes.
constexpr std::size_t kAlignment = 256;

std::size_t round_up(std::size_t bytes) { return (bytes + kAlignment - 1) / kAlignment * kAlignment; }

std::size_t bytes_of(const Tensor& t) { return static_cast<std::size_t>(t.numel()) * size_of(t.dtype()); }

}  // namespace

/// One staging buffer and the two events that guard it.
struct BatchUploader::Slot {
    Device device;
    void* staging = nullptr;   // pinned host memory: inputs, then targets
    std::size_t capacity = 0;  // its bytes
    bool locked = true;        // false: the runtime would not pin it (copies from it make the host wait)
    void* ready = nullptr;     // on the default stream: its work queued before the copy
    void* copied = nullptr;    // on the copy stream: the slot's copies are done
    bool copy_queued = false;  // `copied` has been recorded at least once
    Batch on_device;           // the batch's device tensors, until taken

    explicit Slot(Device d) : device(d) {
        const kernels::DeviceKernels& k = kernels_for(device);
        ready = k.event_create();
        copied = k.event_create();
    }
    ~Slot() {
        const kernels::DeviceKernels& k = kernels_for(device);
        release_staging();
        k.event_destroy(ready);
        k.event_destroy(copied);
    }
    Slot(const Slot&) = delete;
    Slot& operator=(const Slot&) = delete;

    void release_staging() {
        if (staging) pinned_host_memory(device).deallocate(staging, capacity);
        staging = nullptr;
        capacity = 0;
    }

    /// Makes the staging memory hold at least @p bytes (its earlier copy has finished).
    void reserve(std::size_t bytes) {
        if (bytes <= capacity) return;
        release_staging();
        PinnedMemoryProvider& pinned = pinned_host_memory(device);
        const std::size_t unlocked_before = pinned.unlocked_fallback_bytes();
        staging = pinned.allocate(bytes);
        capacity = bytes;
        locked = pinned.unlocked_fallback_bytes() == unlocked_before;
    }
};

BatchUploader::BatchUploader(Device device)
    : device_(device),
      slots_(new Slot[2]{Slot(device), Slot(device)}),
      stream_(kernels_for(device).stream_create(), kernels_for(device).stream_destroy) {}

BatchUploader::~BatchUploader() {
    stream_.reset();  // waits for the queued copies: they read the slots' staging memory
}

BatchUploader::Slot& BatchUploader::slot_of(int batch_number) { return slots_[batch_number % 2]; }

int BatchUploader::copy_stream_id() const { return kernels_for(device_).stream_id(stream_.get()); }

const void* BatchUploader::staging(int slot) const {
    check(slot == 0 || slot == 1, "BatchUploader::staging: the slots are 0 and 1");
    return slots_[slot].staging;
}

void BatchUploader::start(const Batch& host_batch) {
    check(in_flight() < 2, "BatchUploader::start: two batches are on their way already; take() one first "
                           "(there are two staging slots)");
    check(host_batch.inputs.device().is_cpu() && host_batch.targets.device().is_cpu(),
          "BatchUploader::start: the batch must be on the CPU, it is on " + host_batch.inputs.device().str() +
              " / " + host_batch.targets.device().str());
    const kernels::DeviceKernels& k = kernels_for(device_);
    Slot& slot = slot_of(started_);
    // 1. The slot's previous copy reads its staging memory until it is done.
    if (slot.copy_queued) wait_for_event(device_, slot.copied);
    const Tensor inputs = host_batch.inputs.contiguous(), targets = host_batch.targets.contiguous();
    const std::size_t input_bytes = bytes_of(inputs), target_offset = round_up(input_bytes);
    slot.reserve(target_offset + bytes_of(targets));
    auto* staging = static_cast<unsigned char*>(slot.staging);
    std::memcpy(staging, inputs.raw_data_ptr(), input_bytes);
    std::memcpy(staging + target_offset, targets.raw_data_ptr(), bytes_of(targets));
    // 2. Device memory from the cache may be a block the default stream's queued kernels
    // still read: the copy waits for the default stream's work so far.
    slot.on_device = {empty(inputs.shape(), inputs.dtype(), device_), empty(targets.shape(), targets.dtype(), device_)};
    k.event_record(slot.ready, nullptr);
    k.stream_wait(stream_.get(), slot.ready);
    // 3. The copies, and the mark the step (and the slot's next use) waits for.
    copy_to_device_async(device_, slot.on_device.inputs.raw_data_ptr(), staging, input_bytes, stream_.get());
    copy_to_device_async(device_, slot.on_device.targets.raw_data_ptr(), staging + target_offset,
                         bytes_of(targets), stream_.get());
    k.event_record(slot.copied, stream_.get());
    slot.copy_queued = true;
    ++started_;
    // From memory the runtime would not pin, the copy is synchronous: the host waits (counted).
    if (!slot.locked) wait_for_event(device_, slot.copied);
}

Batch BatchUploader::take() {
    check(in_flight() > 0, "BatchUploader::take: no batch was started; start() one first");
    Slot& slot = slot_of(taken_);
    kernels_for(device_).stream_wait(nullptr, slot.copied);  // the default stream waits, not the host
    Batch batch = std::move(slot.on_device);
    slot.on_device = {};
    ++taken_;
    return batch;
}

}  // namespace gl::device
