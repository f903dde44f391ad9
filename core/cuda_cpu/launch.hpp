/// @file
/// @brief gl::cuda::launch(kernel, grid, block, shared_bytes, args...): one spelling of a
/// kernel launch for both runtimes.
///
/// Under nvcc it is `kernel<<<grid, block, shared_bytes>>>(args...)` followed by a check of
/// cudaGetLastError (a bad configuration throws at once; faults inside the kernel show up
/// at the next gl::cuda::synchronize, as in CUDA). On the CPU runtime it runs the whole
/// grid before it returns, and throws if a kernel thread threw or a block deadlocked.
#pragma once

#include <cstddef>
#include <memory>
#include <tuple>
#include <type_traits>
#include <utility>

#include "cuda_cpu/error.hpp"

#if defined(__CUDACC__)
#include <cuda_runtime.h>
#include <string>

namespace gl::cuda {
inline namespace gpu {

/// Throws gl::cuda::Error for a failed cudart call; @p what names the call.
void check(cudaError_t status, const char* what);

/// Launches @p kernel on grid x block threads with @p shared_bytes of dynamic shared memory.
template <class... Params, class... Args>
void launch(void (*kernel)(Params...), dim3 grid, dim3 block, std::size_t shared_bytes,
            Args&&... args) {
    static_assert(sizeof...(Params) == sizeof...(Args), "launch: wrong number of kernel arguments");
    kernel<<<grid, block, shared_bytes>>>(std::forward<Args>(args)...);
    check(cudaGetLastError(), "kernel launch");
}

}  // namespace gpu
}  // namespace gl::cuda

#else  // the CPU runtime

#include "cuda_cpu/vector_types.hpp"

namespace gl::cuda {
inline namespace cpu {

namespace detail {
/// A launch, with the kernel and its arguments behind a plain function pointer, so the
/// runtime (block_scheduler.cpp, launch_cpu.cpp) needs no templates.
struct KernelLaunch {
    dim3 grid, block;
    std::size_t dynamic_shared_bytes = 0;
    void (*run_thread)(const void* call) = nullptr;  ///< runs the kernel body once
    const void* call = nullptr;                      ///< the kernel and its arguments
};
/// Runs every block of @p launch on the worker threads; throws the first block's error.
void launch_kernel(const KernelLaunch& launch);
/// Throws gl::cuda::Error (invalid_configuration) for a grid, block or shared-memory size
/// a GPU would refuse.
void check_launch_config(const KernelLaunch& launch);
}  // namespace detail

namespace detail {
/// Fills @p k's kernel and arguments and returns their owner (keep it alive until the grid
/// has run). The arguments are converted to the kernel's parameter types once, here; every
/// CUDA thread then calls the kernel with its own copies (on a GPU they sit in constant
/// memory and each thread reads them).
template <class... Params, class... Args>
std::shared_ptr<const void> bind_kernel(KernelLaunch& k, void (*kernel)(Params...), Args&&... args) {
    static_assert(sizeof...(Params) == sizeof...(Args), "launch: wrong number of kernel arguments");
    struct Call {
        void (*kernel)(Params...);
        std::tuple<std::decay_t<Params>...> args;
    };
    auto call = std::make_shared<const Call>(Call{kernel, {std::forward<Args>(args)...}});
    k.run_thread = [](const void* c) {
        const Call& self = *static_cast<const Call*>(c);
        std::apply(self.kernel, self.args);
    };
    k.call = call.get();
    return call;
}
}  // namespace detail

/// Runs @p kernel on grid x block CUDA threads with @p shared_bytes of dynamic shared memory.
template <class... Params, class... Args>
void launch(void (*kernel)(Params...), dim3 grid, dim3 block, std::size_t shared_bytes,
            Args&&... args) {
    detail::KernelLaunch k;
    k.grid = grid;
    k.block = block;
    k.dynamic_shared_bytes = shared_bytes;
    const auto call = detail::bind_kernel(k, kernel, std::forward<Args>(args)...);
    detail::launch_kernel(k);
}

}  // namespace cpu
}  // namespace gl::cuda

#endif
