/// @file
/// @brief A reference-counted block of bytes on a device, shared by tensor views.
#pragma once

#include <cstddef>

#include "tensor/allocator.hpp"
#include "tensor/dtype.hpp"

namespace gl {

/// Owns one allocation. Views (transpose, reshape) share a Storage through shared_ptr,
/// and the bytes go back to the allocator that gave them when the last view is gone.
class Storage {
public:
    /// Allocates @p nbytes from @p allocator (uninitialised).
    Storage(std::size_t nbytes, Allocator& allocator, Device device = {});
    ~Storage();
    Storage(const Storage&) = delete;
    Storage& operator=(const Storage&) = delete;

    /// The first byte.
    void* data() const { return data_; }
    /// Size in bytes.
    std::size_t nbytes() const { return nbytes_; }
    /// Where the bytes live.
    Device device() const { return device_; }
    /// The allocator the bytes came from (and go back to).
    Allocator& allocator() const { return allocator_; }

private:
    void* data_;
    std::size_t nbytes_;
    Allocator& allocator_;
    Device device_;
};

}  // namespace gl
