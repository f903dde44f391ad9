/// @file
/// @brief The pluggable allocator interface behind every tensor's storage.
///
/// Owns: how storage bytes are obtained and returned. Tracking and caching allocators
/// (memory/) implement this interface; the tensor never calls malloc itself.
#pragma once

#include <cstddef>

namespace gl {

/// Where a Storage gets its bytes. Implementations must be thread-safe.
class Allocator {
public:
    virtual ~Allocator() = default;
    /// Returns at least @p bytes of memory aligned to at least 64 bytes; throws gl::Error
    /// when it cannot. A request for 0 bytes may return nullptr.
    virtual void* allocate(std::size_t bytes) = 0;
    /// Returns memory obtained from allocate(); @p bytes is the size that was asked for.
    virtual void deallocate(void* ptr, std::size_t bytes) = 0;
    /// A short name for messages and reports ("cpu", "tracking", "caching").
    virtual const char* name() const = 0;
};

/// The plain CPU allocator: 64-byte aligned (one cache line, one AVX-512 vector).
Allocator& cpu_allocator();

/// The allocator new CPU tensors use (cpu_allocator() unless replaced).
Allocator& default_cpu_allocator();
/// Replaces the allocator new CPU tensors use; nullptr restores cpu_allocator().
/// Storage remembers its allocator, so existing tensors are unaffected.
void set_default_cpu_allocator(Allocator* allocator);

}  // namespace gl
