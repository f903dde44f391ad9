/// @file
/// @brief Batches to a device as a training loop wants them: staged in pinned host memory
/// and copied on a stream of their own, so that batch i+1's copy runs while step i computes.
///
/// Owns: a copy stream, two pinned staging slots (double buffering), and the events that
/// order the copies against the default stream, where every kernel of a step runs:
///
///     start(b0)                       stage b0 in slot 0, queue its copy
///     take() -> b0 on the device      the default stream waits for b0's copy (no host wait)
///     start(b1)                       stage b1 in slot 1, queue its copy: it runs ...
///     step(b0)                        ... while step 0's kernels run
///     take() -> b1, start(b2), step(b1), ...
///
/// Three events make that safe without the host waiting for the device:
/// - `copied` (on the copy stream, after a slot's copy): the default stream waits for it
///   before the step's kernels (take), and the host checks it before it refills the slot's
///   staging memory, which the copy reads until it is done (counted as a host
///   synchronisation only when the host really has to wait: the copy was still running);
/// - `ready` (on the default stream, when a copy is queued): the copy waits for the default
///   stream's work queued so far, because the batch's device memory comes from the caching
///   allocator and may be a block that work still reads (freed by the host once queued).
/// On the CPU runtime the default stream is the host thread, so the copy stream's worker
/// really copies while the host runs the kernels, and the timeline records both.
/// Knows nothing about models or training.
#pragma once

#include <cstddef>
#include <memory>

#include "data/dataset.hpp"
#include "tensor/dtype.hpp"

namespace gl::device {

/// Copies batches to a device on a copy stream, through two pinned staging slots.
class BatchUploader {
public:
    /// A copy stream and two empty slots on @p device (cuda or cuda_cpu).
    explicit BatchUploader(Device device);
    /// Waits for the copies still queued, then frees the staging memory.
    ~BatchUploader();
    BatchUploader(const BatchUploader&) = delete;
    BatchUploader& operator=(const BatchUploader&) = delete;

    /// Starts @p host_batch's copy to the device: copies it into the next staging slot and
    /// queues its two copies on the copy stream, after the default stream's work so far;
    /// returns without waiting for them. At most two batches may be started and not taken.
    void start(const Batch& host_batch);
    /// The oldest started batch, on the device. The default stream waits (on the device: the
    /// host does not) for its copy, so kernels launched afterwards read it whole.
    Batch take();
    /// Batches started and not yet taken (0, 1 or 2).
    int in_flight() const { return started_ - taken_; }
    /// The copy stream's Stream::id(): the timeline's stream number of the copies.
    int copy_stream_id() const;
    /// The staging memory of slot @p slot (0 or 1): the host side of its copies.
    const void* staging(int slot) const;

private:
    struct Slot;
    Slot& slot_of(int batch_number);

    Device device_;
    std::unique_ptr<Slot[]> slots_;
    std::unique_ptr<void, void (*)(void*)> stream_;
    int started_ = 0, taken_ = 0;
};

}  // namespace gl::device
