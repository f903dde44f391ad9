// A tiny owner of device memory for the CUDA tests: allocate, copy in, copy out, free.
#pragma once

#include <cstddef>
#include <vector>

#include "cuda_cpu/host_api.hpp"

namespace gl::test {

/// @p n elements of T in device memory, freed on destruction.
template <class T>
class DeviceVector {
public:
    explicit DeviceVector(std::size_t n) : n_(n), ptr_(gl::cuda::malloc_n<T>(n)) {}
    explicit DeviceVector(const std::vector<T>& host) : DeviceVector(host.size()) {
        gl::cuda::memcpy(ptr_, host.data(), n_ * sizeof(T), gl::cuda::CopyKind::host_to_device);
    }
    ~DeviceVector() { gl::cuda::free(ptr_); }
    DeviceVector(const DeviceVector&) = delete;
    DeviceVector& operator=(const DeviceVector&) = delete;

    T* get() const { return ptr_; }
    std::size_t size() const { return n_; }
    void fill_bytes(int byte) { gl::cuda::memset(ptr_, byte, n_ * sizeof(T)); }
    std::vector<T> to_host() const {
        std::vector<T> host(n_);
        gl::cuda::memcpy(host.data(), ptr_, n_ * sizeof(T), gl::cuda::CopyKind::device_to_host);
        return host;
    }

private:
    std::size_t n_;
    T* ptr_;
};

}  // namespace gl::test
